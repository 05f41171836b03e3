"""Every run each FedAnchor notebook reads, from its parameters: one function per notebook, which the
notebook's `plan` cell calls and the job's plan (fssl_core/job/plan.py) calls too, with the same parameters,
without executing the notebook. Nothing here trains or writes a file."""
from __future__ import annotations

from ...profiles import get_profile
from .cells import CLAIM_METHODS, DIAGNOSTICS, SAME_VIEWS, SAME_VIEWS_METRICS, curve_cells, figure5_configs, fmnist_cells, table_cells


def fmnist(profile: str, device: str, *, settings: list[str] | None, anchors: list[int], methods: list[str] | None,
           diagnostics: list[str] | None, seeds: list[int] | None, same_views: list[str] | None,
           claim_seeds: list[int] | None = None) -> tuple:
    """(cells, same_view_cells, probe): the comparison; FedAnchor with SemiFL's server views (the comparison
    without that difference); the diagnostic variants' accuracy cells (DIAGNOSTICS; none at the headline).
    `claim_seeds` (None: `seeds`): the seeds of the methods the claims compare (CLAIM_METHODS and the same-view
    FedAnchor), where more seeds decide more claims."""
    run_profile = get_profile(profile)
    where = dict(settings=settings, anchors=anchors, seeds=seeds)
    cells = fmnist_cells(run_profile, device, methods=methods, **where)
    if claim_seeds is not None:
        claimed = {**where, "seeds": claim_seeds}
        compared = [m for m in CLAIM_METHODS if any(cell.method == m for cell in cells)]
        cells = ([cell for cell in cells if cell.method not in CLAIM_METHODS]
                 + fmnist_cells(run_profile, device, methods=compared, **claimed))
        where = claimed
    if diagnostics is None:
        diagnostics = run_profile.scope(list(DIAGNOSTICS), list(DIAGNOSTICS), headline=[])
    if same_views is None:
        same_views = run_profile.scope([SAME_VIEWS], [SAME_VIEWS], headline=[])
    same_view_cells = fmnist_cells(run_profile, device, methods=same_views, metrics=SAME_VIEWS_METRICS, **where)
    probe = ([c for c in fmnist_cells(run_profile, device, methods=diagnostics, **{**where, "seeds": seeds})
              if c.metric == "accuracy"] if diagnostics else [])
    return cells, same_view_cells, probe


def table1(profile: str, device: str, *, seeds: list[int] | None) -> list:
    return table_cells("table1", get_profile(profile), device, seeds=seeds)


def table2(profile: str, device: str, *, seeds: list[int] | None) -> list:
    return table_cells("table2", get_profile(profile), device, seeds=seeds)


def table3(profile: str, device: str, *, seeds: list[int] | None) -> list:
    return table_cells("table3", get_profile(profile), device, seeds=seeds)


def figure5(profile: str, device: str, *, dataset: str, rounds: list[int] | None) -> list:
    return figure5_configs(get_profile(profile), device, dataset=dataset, rounds=rounds)


def curves(profile: str, device: str, *, figures: list[int], seeds: list[int] | None) -> dict:
    """Figure number -> its [((setting, method, metric), cell)] pairs."""
    return {figure: curve_cells(figure, get_profile(profile), device, seeds=seeds) for figure in figures}


NOTEBOOK_PLANS = {"fedanchor_fmnist": fmnist, "fedanchor_table1": table1, "fedanchor_table2": table2,
                  "fedanchor_table3": table3, "fedanchor_figure5": figure5, "fedanchor_curves": curves}
