"""Why FedAnchor's selected samples fall over training, measured: a published run replayed round by round (the same
computation: each round's test accuracy must equal the stored run's, or it raises), measuring before each round's
clients the geometry its pseudo-labels see on every client's unlabeled samples. The cause and the predictions that
would refute it were committed before any of it was measured, in fssl_core/papers/fedanchor/selected.py's docstring.

    python -m studies.fedanchor.anchor_geometry OUT    # OUT/anchor_geometry.csv and .png

OUT: measurements/2026-11-27-fedanchor-anchor-geometry holds the published one (the quick profile's Fashion-MNIST
FedAnchor runs at seed 1, IID and Dir(0.1), head by head and every parameter; their records must be in the store).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from fssl_core.engine.federation import Federation
from fssl_core.engine.trainer import single_thread_on_cpu
from fssl_core.papers.fedanchor.cells import fmnist_cells
from fssl_core.profiles import PROFILES
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from fssl_core.store.files import atomic_write_text

GEOMETRY_COLUMNS = ["round", "selected_share", "second_above_share", "score_q10", "score_q50", "score_q90",
                    "kept_accuracy", "between_class_cosine", "within_class_cosine", "class_mean_norm", "accuracy"]


def scores_of(z: torch.Tensor, anchors: torch.Tensor, anchor_labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """s_c^avg(z_i) of Eq. 3 for every sample and class [n, C]: the cosine to each of the class's anchors, averaged."""
    means = class_means(anchors, anchor_labels, num_classes)
    return F.normalize(z.float(), dim=1) @ means.T


def class_means(anchors: torch.Tensor, anchor_labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """The mean of each class's normalised anchors [C, d] (its norm is 1 when they all point one way)."""
    unit, labels = F.normalize(anchors.float(), dim=1), anchor_labels.long()
    sums = torch.zeros(num_classes, unit.shape[1], device=unit.device).index_add_(0, labels, unit)
    return sums / torch.bincount(labels, minlength=num_classes).clamp(min=1)[:, None].to(unit.dtype)


def geometry(scores: torch.Tensor, y: torch.Tensor, anchors: torch.Tensor, anchor_labels: torch.Tensor,
             num_classes: int, threshold: float) -> dict[str, float]:
    """One round's measurements (GEOMETRY_COLUMNS, less round and accuracy) from the scores [n, C] of the
    samples labelled `y` (for the kept ones' accuracy only) and the anchors."""
    top = scores.topk(2, dim=1)
    best, second = top.values[:, 0], top.values[:, 1]
    kept = best > threshold
    q = torch.quantile(best, torch.tensor([0.1, 0.5, 0.9], device=best.device))
    means = class_means(anchors, anchor_labels, num_classes)
    norms = means.norm(dim=1)
    cos = F.normalize(means, dim=1) @ F.normalize(means, dim=1).T
    off = ~torch.eye(num_classes, dtype=torch.bool, device=cos.device)
    counts = torch.bincount(anchor_labels.long(), minlength=num_classes).float()
    # mean pairwise cosine within a class from its mean's norm: (n²‖m‖² − n) / (n(n − 1)) over ordered pairs i ≠ j
    within = (counts ** 2 * norms ** 2 - counts) / (counts * (counts - 1)).clamp(min=1)
    return {"selected_share": float(kept.float().mean()), "second_above_share": float((second > threshold).float().mean()),
            "score_q10": float(q[0]), "score_q50": float(q[1]), "score_q90": float(q[2]),
            "kept_accuracy": float((top.indices[:, 0] == y)[kept].float().mean()) if bool(kept.any()) else float("nan"),
            "between_class_cosine": float(cos[off].mean()), "within_class_cosine": float(within.mean()),
            "class_mean_norm": float(norms.mean())}


def anchor_geometry(cfg: RunConfig, store: RunStore | None = None, progress=print) -> pd.DataFrame:
    """Replay FedAnchor run `cfg` and measure, before each round's clients, the geometry of its pseudo-labels
    on all the clients' unlabeled samples for that round (`geometry`), with the round's test accuracy, which
    must equal the stored run's (else ValueError: the replay is not the run)."""
    stored = (store or RunStore()).load(cfg)
    if stored is None:
        raise ValueError(f"anchor_geometry: cfg (run {cfg.run_id}) is not a finished run of the store")
    with single_thread_on_cpu(cfg):
        return _replay(cfg, stored, progress)


def _replay(cfg: RunConfig, stored, progress) -> pd.DataFrame:
    fed = Federation.build(cfg)
    algo, state, rows = fed.algorithm, fed.initial_state(), []
    for rnd in range(1, cfg.rounds + 1):
        everyone = torch.cat([fed.client_view(c, rnd).unlabeled for c in range(cfg.clients)])
        y = fed.images.y[everyone]
        begun = fed.begin_round(state, rnd)            # pre-training (round 1) and this round's Z^anchor
        _, z = algo.ctx.predict(state["model"], everyone)
        scores = scores_of(z, state["anchors"], state["anchor_labels"], fed.num_classes)
        row = {"round": rnd, **geometry(scores, y, state["anchors"], state["anchor_labels"], fed.num_classes,
                                        cfg.pseudo_label_threshold)}
        uploads = [fed.train_client(rnd, c, p, k) for c, p, k in zip(begun.clients, begun.payloads, begun.clocks)]
        state, metrics = fed.server_end(state, rnd, uploads, 0)
        if metrics.get("accuracy") != stored.metrics[rnd - 1].get("accuracy"):
            raise ValueError(f"anchor_geometry: round {rnd}'s accuracy {metrics.get('accuracy')} is not the stored "
                             f"run's {stored.metrics[rnd - 1].get('accuracy')} (run {cfg.run_id})")
        rows.append({**row, "accuracy": metrics["accuracy"]})
        if progress:
            progress(f"[anchor_geometry] {cfg.run_id} round {rnd}/{cfg.rounds}: selected {row['selected_share']:.3f}")
    return pd.DataFrame(rows, columns=GEOMETRY_COLUMNS)


GEOMETRY_PANELS = {"selected_share": "share past t (selected)", "second_above_share": "second-best class past t too",
                   "between_class_cosine": "cosine between class means", "within_class_cosine": "cosine within a class",
                   "score_q50": "median best score"}


# the runs `main` measures, as the panels name them
GEOMETRY_RUNS = {"fedanchor": "FedAnchor, head by head (the paper's cells)",
                 "fedanchor_all_parameters": "FedAnchor, all parameters in both server epochs"}


def write_geometry(runs: dict[str, RunConfig], out, store: RunStore | None = None) -> pd.DataFrame:
    """`anchor_geometry` of each named run into out/anchor_geometry.csv, and its figure (`draw_geometry`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    frame = pd.concat([anchor_geometry(cfg, store).assign(run=name, run_id=cfg.run_id) for name, cfg in runs.items()],
                      ignore_index=True)
    atomic_write_text(out / "anchor_geometry.csv", frame.to_csv(index=False))
    draw_geometry(frame, out / "anchor_geometry.png")
    return frame


def draw_geometry(frame: pd.DataFrame, path) -> None:
    """The rows of `write_geometry`'s CSV as one panel per run (its display name), every measure per round."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = list(dict.fromkeys(frame.run))
    fig, axes = plt.subplots(1, len(runs), figsize=(3.9 * len(runs), 3.9), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], runs):
        part = frame[frame.run == name]
        for column, label in GEOMETRY_PANELS.items():
            ax.plot(part["round"], part[column], label=label)
        ax.axhline(0.6, color="grey", lw=0.8, ls=":")
        method, setting = name.split(", ")
        ax.set_title(f"{GEOMETRY_RUNS.get(method, method)}\n{setting}", fontsize=8)
        ax.set(xlabel="round (its pseudo-labels, before its clients)", ylim=(-0.05, 1.05))
    axes[0][0].set_ylabel("share of unlabeled samples / cosine")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.suptitle("FedAnchor on Fashion-MNIST (quick profile, seed 1): what its pseudo-labels see each round "
                 "(t = 0.6, dotted)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def published_runs() -> dict[str, RunConfig]:
    """The runs `main` measures: the published Fashion-MNIST FedAnchor runs at seed 1 (quick profile, IID and
    Dir(0.1)), head by head and every parameter, named "<method>, <setting>"."""
    runs = {}
    for method in GEOMETRY_RUNS:
        for cell in fmnist_cells(PROFILES["quick"], "cpu", methods=[method], seeds=[1]):
            if cell.metric == "selected":
                runs[f"{method}, {cell.setting}"] = cell.configs[0]
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.fedanchor.anchor_geometry",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="the folder: its anchor_geometry.csv and anchor_geometry.png")
    args = parser.parse_args(argv)
    write_geometry(published_runs(), args.out)


if __name__ == "__main__":
    main()
