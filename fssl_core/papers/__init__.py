"""The reproduced papers, one folder each (the shape of a Flower baseline): its cells, claims, causes,
printed values (values*.csv), display names and a README; and the registry that gathers from every
folder what the report and the figures are given as arguments.

Adding a paper is a folder beside these and one line in PAPERS. The folder's package may define
DISPLAY_NAMES (method id -> the paper's name), FAR_CELL_CAUSES (paper -> a function of its published
rows, see report.summary) and CLAIM_SOURCES ((paper, claims table) -> (the table of the cells its rows are
computed from, the builder: one profile's cells -> [(claim row, claim_test.Comparison)]), from which both the
cells each claim compares (claim_comparisons, report.claim_verdicts) and the published claim rows after a
republish (rebuilt_claim_rows) are read); its values*.csv follow papers/README.md.
"""
from __future__ import annotations

import functools
import importlib
from pathlib import Path
from types import ModuleType
from typing import Callable

import pandas as pd

from ..paths import project_root, results_dir
from ..report.tables import CLAIM_KEY, COLUMNS, published_results, read_results, replace_readme_block
from ..report.page import results_tables_markdown
from .values import VALUES_GLOB, check_names, printed_value, read_values

# The papers' names as the values CSVs' `paper` column writes them -> the package reproducing each.
# The FedMix conference paper and the journal extending it share one folder (papers/fedmix/README.md).
PAPERS = {
    "fedsiam": "fssl_core.papers.fedsiam",
    "fedmix_fedfreq": "fssl_core.papers.fedmix",
    "fedmix_fedloss": "fssl_core.papers.fedmix",
    "fedanchor": "fssl_core.papers.fedanchor",
}


README_START, README_END = "<!-- results:start -->", "<!-- results:end -->"


def packages() -> dict[str, ModuleType]:
    """Package name -> module of every registered paper, in the order of their papers' names."""
    names = dict.fromkeys(PAPERS[paper] for paper in sorted(PAPERS))
    return {name: importlib.import_module(name) for name in names}


def notebook_plans() -> dict[str, Callable]:
    """Notebook name -> the function that gives every run it reads (each paper's plans.NOTEBOOK_PLANS): what the
    notebook's plan cell calls and what the job's plan calls, with the same parameters (fssl_core/job/plan.py)."""
    plans: dict[str, Callable] = {}
    for package in packages().values():
        plans.update(getattr(package, "NOTEBOOK_PLANS", {}))
    return plans


def folder_of(package: ModuleType) -> Path:
    return Path(package.__file__).parent


def paper_values() -> pd.DataFrame:
    """Every registered paper's printed numbers, one row per number."""
    return pd.concat([read_values(folder_of(p)) for p in packages().values()], ignore_index=True)


def far_cell_causes() -> dict[str, Callable[[pd.DataFrame], pd.DataFrame]]:
    """Paper -> its published cells beyond report.WITHIN_POINTS with `cause_measured`, for the papers whose
    notebooks measure causes (report.summary counts them)."""
    return {paper: cause for p in packages().values() for paper, cause in getattr(p, "FAR_CELL_CAUSES", {}).items()}


ClaimBuilder = Callable[[pd.DataFrame], list]     # one profile's cells -> [(claim row, claim_test.Comparison)]


def claim_sources() -> dict[tuple[str, str], tuple[str, ClaimBuilder]]:
    """(paper, claims table) -> (the table of its cells, its builder), over every paper (a package's CLAIM_SOURCES)."""
    return {key: source for p in packages().values() for key, source in getattr(p, "CLAIM_SOURCES", {}).items()}


def _built_claims(published: pd.DataFrame, paper: str, cells_table: str, build: ClaimBuilder) -> list:
    """`build` on the published cells of `cells_table`, one measuring profile at a time."""
    cells = published[(published.paper == paper) & (published.table == cells_table)]
    return [built for _, part in cells.groupby("profile", sort=False) for built in build(part)]


def _paper_comparisons(sources: dict, published: pd.DataFrame) -> dict:
    return {tuple(row[k] for k in CLAIM_KEY): comparison for (paper, _), (cells_table, build) in sources.items()
            for row, comparison in _built_claims(published, paper, cells_table, build)}


def claim_comparisons() -> dict[str, Callable[[pd.DataFrame], dict]]:
    """Paper -> the function giving, per published claim row (report.CLAIM_KEY as a tuple), the cells it
    compares (claim_test.Comparison): the claims' own builders (claim_sources) run on the published cells, so a
    verdict is a function of the committed rows; report.claim_verdicts tests each by claim_test.claim_test."""
    by_paper: dict[str, dict] = {}
    for key, source in claim_sources().items():
        by_paper.setdefault(key[0], {})[key] = source
    return {paper: functools.partial(_paper_comparisons, sources) for paper, sources in by_paper.items()}


def rebuilt_claim_rows(published: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """`published` (a results table after a merge) with each published claim row rebuilt from the cells beside
    it, and a note per claims table whose rows changed. A narrowed republish brings a claim's cells but not
    always the claim (FedSiam's upload claims compare FedSiam-Π, which a baselines-only rerun leaves out): its
    published row would then keep the old cells' difference. Only published rows are rebuilt, in place: a claim
    its notebook never stated (e.g. at a profile it publishes none for) is not added, and one its cells no
    longer give stays, said (nothing published shrinks)."""
    rows, notes = published.reset_index(drop=True), []
    for (paper, claims_table), (cells_table, build) in claim_sources().items():
        mine = ((rows.paper == paper) & (rows.table == claims_table)).values
        if not mine.any():
            continue
        built = pd.DataFrame([row for row, _ in _built_claims(rows, paper, cells_table, build)], columns=COLUMNS)
        fresh = dict(zip(map(tuple, built[CLAIM_KEY].astype(str).values), built.to_dict("records")))
        keys = list(map(tuple, rows[CLAIM_KEY].astype(str).values))
        changed = [i for i in mine.nonzero()[0] if keys[i] in fresh and _differs(rows.iloc[i], fresh[keys[i]])]
        stale = [i for i in mine.nonzero()[0] if keys[i] not in fresh]
        for i in changed:
            rows.loc[i, COLUMNS] = [fresh[keys[i]][c] for c in COLUMNS]
        if changed or stale:
            notes.append(f"{paper} {claims_table}: {len(changed)} claim row(s) rebuilt from the published cells"
                         + (f"; {len(stale)} its cells no longer give kept as published" if stale else ""))
    return rows, notes


def _differs(old: pd.Series, new: dict) -> bool:
    """A published row and its rebuild disagree on a column (numbers as numbers: a CSV reads 1 back as 1.0)."""
    def same(a, b) -> bool:
        a, b = (None if pd.isna(v) or v == "" else v for v in (a, b))     # a CSV reads a missing text back as ""
        if a is None or b is None:
            return a is b
        try:
            return float(a) == float(b)
        except (TypeError, ValueError):
            return str(a) == str(b)
    return not all(same(old[c], new[c]) for c in COLUMNS)


def table_intros() -> dict[tuple[str, str], str]:
    """(paper, table id) -> the sentence that introduces the table in results/REPORT.md (a package's TABLE_INTROS):
    what its rows are and why they are there, so a side table is never a block of numbers to guess at."""
    return {key: text for p in packages().values() for key, text in getattr(p, "TABLE_INTROS", {}).items()}


def claim_explanations() -> dict[tuple[str, str], str]:
    """(paper, claim metric) -> where a refuted claim of that metric is explained (a notebook and its section; a
    package's CLAIM_EXPLANATIONS); results/REPORT.md puts it beside the verdict."""
    return {key: where for p in packages().values() for key, where in getattr(p, "CLAIM_EXPLANATIONS", {}).items()}


def display_names() -> dict[str, str]:
    """Method id -> the paper's name for it, over every registered paper; two papers naming one id two
    ways is refused, since a figure could then show either."""
    merged: dict[str, str] = {}
    for name, p in packages().items():
        for method, label in getattr(p, "DISPLAY_NAMES", {}).items():
            if merged.setdefault(method, label) != label:
                raise ValueError(f"{name}.DISPLAY_NAMES[{method!r}]={label!r}: another paper names it "
                                 f"{merged[method]!r}; use one name or another method id")
    return merged


def table_figures() -> dict[str, tuple[str, str]]:
    """Notebook (= figure) name -> (title, the id of the main table it draws) of every paper's table figures
    (a package's TABLE_FIGURES)."""
    return {name: entry for p in packages().values() for name, entry in getattr(p, "TABLE_FIGURES", {}).items()}


def table_figure_rows(name: str, published: pd.DataFrame) -> pd.DataFrame:
    """The rows of a notebook's published results that its table figure draws: its main table's (side tables,
    such as the authors' code reruns, stay in the CSV and the notebook)."""
    return published[published.table == table_figures()[name][1]]


def redraw_table_figure(name: str, profile: str) -> Path | None:
    """Draw figures/<name>.png from the notebook's published rows (results/<name>.csv, every profile's rows:
    paper_vs_reproduced shows the paper-protocol one where a cell has both), with the rows' digest in the PNG;
    None when `name` is no table figure or nothing is published. So a figure always shows the table beside
    it, whichever slice the last run measured (tests/test_figure_sources.py)."""
    # matplotlib.pyplot (report.plots' too), for a figure alone: a plan of this package imports neither
    from ..report.plots import paper_vs_reproduced, save_figure
    import matplotlib.pyplot as plt
    csv = results_dir(profile) / f"{name}.csv"
    if name not in table_figures() or not csv.exists():
        return None
    frame = table_figure_rows(name, read_results(csv))
    devices = ", ".join(sorted(d for d in set(frame.device.astype(str)) if d and d != "nan"))
    title = table_figures()[name][0] + (f" ({devices})" if devices else "")
    fig, _ = paper_vs_reproduced(frame, title=title, display_names=display_names(),
                                 fills=f"python -m fssl_core reproduce --profile paper --only {name} --device cuda")
    try:
        return save_figure(fig, name, profile, source=frame, published=True)
    finally:
        plt.close(fig)


def papers_of(package: ModuleType) -> list[str]:
    return sorted(paper for paper, name in PAPERS.items() if name == package.__name__)


def readme_results(package: ModuleType, frame: pd.DataFrame | None = None) -> str:
    """The results block of a paper folder's README: its rows measured at the paper's protocol, from the
    committed results (results/*.csv) unless `frame` is given."""
    frame = published_results(project_root() / "results") if frame is None else frame
    return results_tables_markdown(frame, papers_of(package), getattr(package, "DISPLAY_NAMES", {}))


def update_readmes(frame: pd.DataFrame | None = None) -> list[Path]:
    """Rewrite every registered paper's README results block; the READMEs whose block was written."""
    written = []
    for package in packages().values():
        readme = folder_of(package) / "README.md"
        if replace_readme_block(README_START, README_END, readme_results(package, frame), readme):
            written.append(readme)
    return written

