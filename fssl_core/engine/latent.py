"""The latent space of a trained run: anchor-head embeddings of test images, reduced to 2-D by
t-SNE (scikit-learn), as FedAnchor's Figure 5 draws them."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.manifold import TSNE

from ..run_config import RunConfig
from .federation import Federation
from ..store import RunStore


@torch.no_grad()
def test_embeddings(cfg: RunConfig, store: RunStore | None = None, samples: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """(unit-norm anchor-head embeddings [n, d], labels [n]) of the first `samples` test images,
    from the final global model of the finished run of `cfg` (eval mode)."""
    if cfg.projection_dim <= 0:
        raise ValueError(f"test_embeddings: RunConfig.projection_dim={cfg.projection_dim}: the run has no anchor head")
    fed = Federation.build(cfg)
    tensors = (store or RunStore()).final_state(cfg)["model"]
    x, y = fed.data.test_x[:samples], fed.data.test_y[:samples]
    _, z = fed.ctx.apply(tensors, fed.data.normalize(x), train=False, embed=True)
    return F.normalize(z, dim=1).cpu().numpy(), y.cpu().numpy()


def tsne_2d(z: np.ndarray, seed: int = 0) -> np.ndarray:
    """t-SNE of `z` to two dimensions (cosine distances, as the anchor pseudo-labels use)."""
    perplexity = min(30.0, max(2.0, (len(z) - 1) / 3))
    return TSNE(n_components=2, metric="cosine", init="pca", perplexity=perplexity, random_state=seed).fit_transform(z)
