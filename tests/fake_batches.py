"""One step's batch of random 28×28 images drawn through the engine's own `batches`, for loss tests."""
import torch

from fssl_core.learning.batches import DataView, Plan, TrainImages, batches
from fssl_core.data.augment import augment_spec_for


def mixed_batch(labeled: int, unlabeled: int):
    """(the batch, its TrainImages): `labeled` labeled and `unlabeled` unlabeled samples (MNIST's views)."""
    g = torch.Generator().manual_seed(0)
    n = labeled + unlabeled
    images = TrainImages(torch.rand(n, 1, 28, 28, generator=g), torch.arange(n) % 10,
                         lambda x: (x - 0.5) / 0.5, augment_spec_for("mnist"))
    view = DataView(labeled=torch.arange(labeled), unlabeled=torch.arange(labeled, n))
    plan = Plan(epochs=1, labeled_batch=labeled, unlabeled_batch=unlabeled, epoch_over="unlabeled")
    return next(batches(images, view, plan, torch.Generator().manual_seed(1))), images
