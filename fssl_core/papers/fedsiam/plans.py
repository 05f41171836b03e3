"""Every run each FedSiam notebook reads, from its parameters: one function per notebook, which the
notebook's `plan` cell calls and the job's plan (fssl_core/job/plan.py) calls too, with the same parameters,
without executing the notebook. Nothing here trains or writes a file."""
from __future__ import annotations

from ...profiles import get_profile
from .authors_code import (AUTHORS_SIAMESE_TABLE7, AUTHORS_SIAMESE_TABLE8, SUPERVISED_BASELINES,
                           authors_fixmatch_cells, authors_network_cells, authors_optimiser_cells,
                           authors_siamese_cells, table6_server_alone_cells, table6_server_step_cells,
                           table7_authors_siamese_cells, table8_authors_siamese_cells)
from .cells import (HEADLINE_METHODS, figure5_cells, figure6_cells, paper_protocol_scope, table5_cells, table6_cells,
                    table7_cells, table8_cells)


def table5(profile: str, device: str, *, datasets: list[str] | None, settings: list[str] | None,
           labeled_ratios: list[float] | None, methods: list[str] | None, seeds: list[int] | None,
           headline_methods: list[str] | None, headline_seeds: list[int], protocol_check_settings: list[str] | None,
           protocol_check_methods: list[str], authors_rows: bool) -> tuple:
    """(cells, headline_cells, check_cells, optimiser_cells, fixmatch_cells, network_cells, siamese_cells):
    the profile's sweep; the headline cell at the paper's protocol; Non-IID-I at the paper's protocol; the
    authors' optimiser, their Fed(Fix)Match, their network and their siamese computation beside them."""
    run_profile = get_profile(profile)
    paper_protocol = run_profile.at_paper_protocol()
    cells = table5_cells(run_profile, device, methods=methods, settings=settings, datasets=datasets,
                         labeled_ratios=labeled_ratios, seeds=seeds,
                         metrics=("accuracy", "accuracy_test_selected", "accuracy_last5", "upload_mb"))
    if headline_methods is None:
        headline_methods = paper_protocol_scope(run_profile, "paper_protocol_methods", HEADLINE_METHODS)
    if protocol_check_settings is None:
        protocol_check_settings = paper_protocol_scope(run_profile, "paper_protocol_settings", ["noniid1"])
    mnist_iid = dict(settings=["iid"], datasets=["mnist"], labeled_ratios=[0.10], seeds=headline_seeds)
    headline_cells = (
        table5_cells(paper_protocol, device, methods=headline_methods,
                     metrics=("accuracy", "accuracy_test_selected", "upload_mb"), **mnist_iid)
        + table5_cells(paper_protocol, device, methods=[m for m in headline_methods if m == "fedsiam_d"],
                       metrics=("mean_tau", "online_upload_fraction"), **mnist_iid))
    check_cells = table5_cells(paper_protocol, device, methods=protocol_check_methods, settings=protocol_check_settings,
                               datasets=["mnist"], labeled_ratios=[0.10], seeds=headline_seeds)
    optimiser_methods = (paper_protocol_scope(run_profile, "paper_protocol_methods", SUPERVISED_BASELINES)
                         if authors_rows else [])
    # the authors' optimiser and their Fed(Fix)Match computation in every MNIST column of the sweep at the paper
    # profile, the IID γ = 0.10 column at the others (each is a paper-protocol run beside the profile's sweep)
    swept = {(c.setting, float(c.labeled)) for c in cells if c.dataset == "mnist"}
    columns = dict(settings=run_profile.scope(sorted({s for s, _ in swept}), ("iid",)),
                   labeled_ratios=run_profile.scope(sorted({g for _, g in swept}), (0.10,)), seeds=headline_seeds)
    optimiser_cells = authors_optimiser_cells(paper_protocol, device, methods=optimiser_methods, **columns)
    fixmatch_cells = authors_fixmatch_cells(paper_protocol, device, **columns) if optimiser_methods else []
    # and each of those computations with the authors' MNIST network (Table 1's plus their dropout): the IID
    # column's rows, and at the paper profile the rows no other measurement explains (AUTHORS_NETWORK_SCOPE);
    # and their siamese rows as their code computes them: their network on unaugmented inputs, EMA on epochs
    network_cells = authors_network_cells(paper_protocol, device, **columns) if fixmatch_cells else []
    siamese_cells = authors_siamese_cells(paper_protocol, device, **columns) if fixmatch_cells else []
    return cells, headline_cells, check_cells, optimiser_cells, fixmatch_cells, network_cells, siamese_cells


def table6(profile: str, device: str, *, datasets: list[str] | None, settings: list[str] | None,
           labeled_ratios: list[float] | None, methods: list[str] | None, seeds: list[int] | None,
           server_alone_seeds: list[int] | None) -> tuple:
    """(cells, server_alone_cells, server_step_cells): the table; the server alone on its labeled set; the
    server's step as the authors' labels-at-server code takes it (MNIST)."""
    run_profile = get_profile(profile)
    mnist = [d for d in datasets if d == "mnist"]
    cells = table6_cells(run_profile, device, methods=methods, settings=settings, datasets=datasets,
                         labeled_ratios=labeled_ratios, seeds=seeds,
                         metrics=("accuracy", "accuracy_test_selected", "accuracy_last5"))
    server_alone_cells = table6_server_alone_cells(run_profile, device, methods=methods, settings=settings, datasets=mnist,
                                                   labeled_ratios=labeled_ratios, seeds=server_alone_seeds or seeds)
    server_step_cells = table6_server_step_cells(run_profile, device, settings=settings, datasets=mnist,
                                                 labeled_ratios=labeled_ratios, seeds=seeds)
    return cells, server_alone_cells, server_step_cells


def table7(profile: str, device: str, *, datasets: list[str] | None, variants: list[str] | None,
           seeds: list[int] | None) -> tuple:
    """(cells, authors_cells): the table; the MNIST cells that sat far above the paper, as the authors' code
    computes them, at the paper's protocol (AUTHORS_SIAMESE_TABLE7): what their measured cause is read from."""
    run_profile = get_profile(profile)
    cells = table7_cells(run_profile, device, datasets=datasets, variants=variants, seeds=seeds,
                         metrics=("accuracy", "accuracy_test_selected"))
    run = {c.setting for c in cells}
    authors_cells = table7_authors_siamese_cells(
        run_profile.at_paper_protocol(), device,
        variants=[v for v in AUTHORS_SIAMESE_TABLE7 if "mnist" in datasets and v in run])
    return cells, authors_cells


def table8(profile: str, device: str, *, datasets: list[str] | None, settings: list[str] | None,
           seeds: list[int] | None) -> tuple:
    """(cells, authors_cells): as table7, for Table 8's consistency losses (AUTHORS_SIAMESE_TABLE8)."""
    run_profile = get_profile(profile)
    cells = table8_cells(run_profile, device, datasets=datasets, settings=settings, seeds=seeds,
                         metrics=("accuracy", "accuracy_test_selected"))
    run = {c.setting for c in cells}
    authors_cells = table8_authors_siamese_cells(
        run_profile.at_paper_protocol(), device,
        rows=[(s, loss) for s, loss in AUTHORS_SIAMESE_TABLE8 if "mnist" in datasets and s in run])
    return cells, authors_cells


def figure5(profile: str, device: str, *, datasets: list[str] | None, settings: list[str] | None,
            methods: list[str] | None, seeds: list[int] | None) -> list:
    return figure5_cells(get_profile(profile), device, datasets=datasets, settings=settings, methods=methods,
                         seeds=seeds)


def figure6(profile: str, device: str, *, datasets: list[str] | None, mus: list[float] | None,
            seeds: list[int] | None) -> list:
    return figure6_cells(get_profile(profile), device, datasets=datasets, mus=mus, seeds=seeds)


def tau_curves(profile: str, device: str) -> list:
    """The measured cell, by its configs: FedSiam-D, MNIST IID γ = 0.10, the paper's protocol, seeds 1234-1236."""
    return table5_cells(get_profile(profile).at_paper_protocol(), device, methods=["fedsiam_d"], settings=["iid"],
                        datasets=["mnist"], labeled_ratios=[0.10], seeds=[1234, 1235, 1236])


NOTEBOOK_PLANS = {"fedsiam_table5": table5, "fedsiam_table6": table6, "fedsiam_table7": table7,
                  "fedsiam_table8": table8, "fedsiam_figure5": figure5, "fedsiam_figure6": figure6,
                  "fedsiam_tau_curves": tau_curves}
