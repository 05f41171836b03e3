"""Paper values beside reproduced values: per notebook a CSV, merged into results/REPORT.md.

A table cell is a `Cell`: the paper's coordinates (paper, table, setting, labeled, dataset,
method, metric), the value the paper printed there and the RunConfigs (one per seed) that reproduce
it. `measured_row` turns a cell's finished runs into its row, the paper's value beside the mean and
standard deviation of ours; what trains them is the job's (job/cells.py: reproduce_cells). Nothing here
trains or loads data: a report reads the store and the published rows. A cell's paper value comes from its
paper's values CSV (fssl_core/papers/<paper>/), never typed into a notebook.

Nothing here knows a paper: what is particular to one (its cells, the causes of its far cells, its
display names) is passed in by the caller.
"""
from __future__ import annotations

import glob
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .claim_words import verdict_words
from .claim_test import (BY_CONSTRUCTION, CUT_OFF, HOLDS, MIN_SEEDS, NOT_MEASURED, TESTED, UNTESTED, WITHIN_NOISE,
                         Comparison, Verdict, holm)
from ..run_config import RunConfig
from ..paths import project_root, results_dir
from ..profiles import REDUCED, Profile
from ..store import AT_CHANCE, MEASURED, RunResult, RunStore, atomic_write_text, exclusive

COLUMNS = ["paper", "table", "setting", "labeled", "dataset", "method", "metric", "paper_value",
           "reproduced_value", "reproduced_std", "n_runs", "profile", "device", "seconds", "status", "run_ids"]
NEEDS_DATA, NEEDS_GPU, DIVERGED = "needs-data", "needs-gpu", "diverged"
# a cell a rebuild from the records could not measure (some of its runs have no record): no statement, never published
NOT_RECORDED = "not-recorded"


@dataclass(frozen=True)
class Cell:
    paper: str
    table: str
    setting: str
    labeled: str
    dataset: str
    method: str
    configs: tuple[RunConfig, ...]
    metric: str = "accuracy"
    paper_runs: int = 1          # runs the paper averaged; fewer finished runs make the row "reduced"
    paper_value: float | None = None    # what the paper printed at these coordinates; None where nothing


# How a cell's metric is read from a finished run. Bytes are the run's totals over all rounds.
METRICS: dict[str, Callable[[RunResult], float | None]] = {
    "accuracy": lambda r: r.accuracy,                                   # final round's test accuracy, %
    "upload_mb": lambda r: r.summary["upload_bytes"] / 1e6,            # clients -> server, MB
    "download_mb": lambda r: r.summary["download_bytes"] / 1e6,        # server -> clients, MB
    "total_mb": lambda r: (r.summary["upload_bytes"] + r.summary["download_bytes"]) / 1e6,
    # the highest test accuracy of the run's curve and its round: papers that claim "highest
    # converged accuracy" or "rounds to best" report these; never used to select a model
    "best_accuracy": lambda r: r.summary["best_accuracy"],
    "best_round": lambda r: r.summary["best_round"],
    # FedSiam's authors report the global model of the round with the lowest *test* loss (their
    # dataset_valid is the test set; main_*.py keeps w_best on `loss_valid <= best_loss_valid`, so a tie
    # goes to the later round): a test-selected number, shown beside ours so a gap can be read, never
    # used to pick a model. None for runs stored before the test loss was logged.
    "accuracy_test_selected": lambda r: _test_selected(r) if r.status == "ok" else None,
    # the mean test accuracy of the last five evaluated rounds: how far one seed's final round may
    # sit from where its curve is (not a paper's metric; FedSiam's notebooks show it beside accuracy)
    "accuracy_last5": lambda r: _round_mean(r, "accuracy", last=5) if r.status in MEASURED else None,
    # SemiFL / FedAnchor pseudo-labelling, averaged over the run's rounds (FedAnchor Figs. 2-3, 9):
    # accuracy (%) of the pseudo-labels that passed the threshold, and samples passing per client
    "pseudo_label_accuracy": lambda r: _round_mean(r, "pseudo_label_accuracy"),
    "pseudo_label_accuracy_all": lambda r: _round_mean(r, "pseudo_label_accuracy_all"),   # of every sample
    "selected": lambda r: _round_mean(r, "selected"),
    "selected_softmax95": lambda r: _round_mean(r, "selected_softmax95"),   # FedAnchor's past SemiFL's test
    # FedSiam-D: τ as the server set it (Eq. 11/12, clipped to [0, 1]) and the fraction of online-net
    # layers the clients actually uploaded, both averaged over the rounds (target: 1 − μ)
    "mean_tau": lambda r: _round_mean(r, "tau"),
    "online_upload_fraction": lambda r: _round_mean(r, "online_upload_fraction"),
}


def _test_selected(result: RunResult) -> float | None:
    evaluated = [m for m in result.metrics if "test_loss" in m and "accuracy" in m]
    if not evaluated:
        return None
    best = min(evaluated, key=lambda m: (m["test_loss"], -m["round"]))     # lowest loss, the later round on a tie
    return best["accuracy"]


def _round_mean(result: RunResult, key: str, last: int | None = None) -> float | None:
    """The mean of `key` over the rounds that logged it (the `last` of them, if given)."""
    values = [m[key] for m in result.metrics if key in m][-last if last else None:]
    return float(np.mean(values)) if values else None


def row_of(cell: Cell, profile: Profile, device: str) -> dict:
    return {"paper": cell.paper, "table": cell.table, "setting": cell.setting, "labeled": cell.labeled,
            "dataset": cell.dataset, "method": cell.method, "metric": cell.metric, "paper_value": cell.paper_value,
            "reproduced_value": math.nan, "reproduced_std": math.nan, "n_runs": 0,
            "profile": profile.name, "device": device, "seconds": 0.0}


def measured_row(cell: Cell, results: Sequence[RunResult], profile: Profile, device: str) -> dict:
    """A cell's results row from its finished runs (`results`, one a config): the metric's mean and sample std over
    the measured runs, rounded as published, the runs named, and the status its worst run gives."""
    row = row_of(cell, profile, device)
    # an at-chance run (store/summary.py) is a measurement: its value counts, and the row says "at-chance"
    values = [METRICS[cell.metric](r) for r in results if r.status in MEASURED]
    values = [v for v in values if v is not None]
    row.update(n_runs=len(values), seconds=round(sum(r.summary["seconds"] for r in results), 1),
               run_ids=" ".join(r.config.run_id for r in results))     # what the row was computed from
    if values:
        row.update(reproduced_value=round(float(np.mean(values)), 2),
                   reproduced_std=round(float(np.std(values, ddof=1)), 2) if len(values) > 1 else math.nan)
    statuses = {r.status for r in results}      # a row's worst run names it
    status = (DIVERGED if DIVERGED in statuses else AT_CHANCE if AT_CHANCE in statuses else
              profile.status if len(values) >= cell.paper_runs else REDUCED)
    return {**row, "status": status}


def save_notebook_results(frame: pd.DataFrame, notebook: str, profile: Profile) -> Path:
    """results/<notebook>.csv (results/smoke/ for the smoke profile) in the notebook's folder (staged for
    publishing under `reproduce`, results/by_hand/ when run by hand: paths.notebook_output_root), written
    atomically; one row per cell and measuring profile (the first where a notebook measured a cell twice, e.g.
    its table's cells and the same cells' paper-protocol check at the paper profile)."""
    path = results_dir(profile.name, notebook=True) / f"{notebook}.csv"
    atomic_write_text(path, frame[COLUMNS].drop_duplicates([*KEY, "profile"]).to_csv(index=False))
    return path


def comparison_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The readable form: paper and reproduced side by side, with the difference; a diverged row shows no value (its
    runs that did not diverge are no measurement of the cell: the CSV keeps their mean, n_runs counts them)."""
    out = frame.copy()
    diverged = out.status == DIVERGED
    out.loc[diverged, ["reproduced_value", "reproduced_std"]] = math.nan
    out["delta"] = (out.reproduced_value - out.paper_value).round(2)
    cols = ["setting", "labeled", "dataset", "method", "metric", "paper_value", "reproduced_value", "reproduced_std",
            "delta", "n_runs", "profile", "device", "status"]
    return out[cols]


def large_deltas(frame: pd.DataFrame, points: float = 2.0) -> pd.DataFrame:
    """Rows whose reproduced value is more than `points` from the paper's (a notebook explains them)."""
    table = comparison_table(frame)
    return table[table.delta.abs() > points]


# --- the merged report ---------------------------------------------------------------------------
README_START, README_END = "<!-- results:start -->", "<!-- results:end -->"
WITHIN_POINTS = 1.5          # a cell is "within" when its reproduced value is this close to the paper's
KEY = ["paper", "table", "setting", "labeled", "dataset", "method", "metric"]


# Paper -> a function of its published rows giving its cells beyond WITHIN_POINTS (KEY columns but `paper`), each
# with a boolean `cause_measured` (a cause under the paper's one pre-registered reading) and optionally
# `exploratory_near` (another reading lands near: never a cause), e.g. papers.fedsiam.explain_published.
FarCellCauses = Mapping[str, Callable[[pd.DataFrame], pd.DataFrame]]


def published_results(folder: Path) -> pd.DataFrame:
    """Every notebook's results CSV in `folder` (results/), one frame; report.csv, their merge, left out."""
    frames = [read_results(f) for f in sorted(glob.glob(str(Path(folder) / "*.csv"))) if not f.endswith("report.csv")]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def notebooks_of_tables(folder: Path) -> dict[tuple[str, str], str]:
    """(paper, table) -> the notebook whose results CSV in `folder` holds its rows (the CSV's name)."""
    out: dict[tuple[str, str], str] = {}
    for f in sorted(Path(folder).glob("*.csv")):
        if f.name != "report.csv":
            for key in read_results(f)[["paper", "table"]].drop_duplicates().itertuples(index=False):
                out.setdefault(tuple(key), f.stem)
    return out


NUMERIC = ["paper_value", "reproduced_value", "reproduced_std", "n_runs", "seconds"]


def read_results(path) -> pd.DataFrame:
    """A notebook's results CSV; empty cells of the numeric columns (needs-data rows) become NaN."""
    frame = pd.read_csv(path, dtype={"labeled": str, "run_ids": str}, keep_default_na=False)
    for column in NUMERIC:
        frame[column] = pd.to_numeric(frame[column].replace("", np.nan), errors="coerce")
    return frame


def best_protocol(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: its paper-protocol row where it has one, else its reduced row."""
    ranked = frame.assign(_rank=(frame.profile != "paper").astype(int) + frame.n_runs.fillna(0).eq(0) * 2)
    return ranked.sort_values("_rank", kind="stable").drop_duplicates(KEY).drop(columns="_rank")


def is_claim(frame: pd.DataFrame) -> pd.Series:
    return frame.table.str.endswith("_claims")


# A parity claim ("comparable", "basically the same") holds while the 90% interval of the difference lies
# within this many points of the paper's statement (TOST, claim_test). The papers give no number; FedSiam's own
# Table 5 calls FedSiam-D and FedSiam-MT comparable (§4.3) at printed differences of -0.21 to +0.87 points on
# MNIST (fedsiam.md:328-345), so one point is the narrowest whole-point band holding every difference the
# paper itself calls comparable (tests/test_claim_test.py recomputes it from values.csv). The alternative, a
# band from our seeds' spread, would let the noise set the claim.
PARITY_POINTS = 1.0
PARITY_METRICS = ("best_accuracy_gap",)       # metrics that state parity besides those named *_parity
CLAIM_KEY = [*KEY, "profile"]                 # a claim row's identity: one per measuring profile

# Paper -> a function of its published rows giving, per claim row (CLAIM_KEY as a tuple), the cells the
# claim compares (claim_test.Comparison: each side's mean, std and seeds, read from the same rows); the
# papers' registry gathers them (papers.claim_comparisons) and claim_verdicts tests each.
ClaimComparisons = Mapping[str, Callable[[pd.DataFrame], Mapping[tuple, Comparison]]]


def is_parity(metric: str) -> bool:
    return metric.endswith("_parity") or metric in PARITY_METRICS


def claim_verdicts(frame: pd.DataFrame, claim_comparisons: ClaimComparisons | None = None) -> pd.DataFrame:
    """Each claim row (tables named *_claims; `reproduced_value` the published difference, ours − theirs,
    or a saving) at its best protocol, with `verdict` and `interval` from claim_test.claim_test (its rules
    in claim_test's docstring) on the cells that `claim_comparisons[paper]` names from the same `frame`; a
    parity claim is one whose metric is named *_parity or is in PARITY_METRICS. A row whose paper names no
    cells for it (e.g. a notebook showing its claim rows alone) is "untested (n=k)" below 3 seeds, else
    "untested (cells not named)"."""
    claims = best_protocol(frame[is_claim(frame)])
    comparisons: dict[tuple, Comparison] = {}
    for paper, compare in (claim_comparisons or {}).items():
        mine = frame[frame.paper == paper]
        if len(mine):
            comparisons.update(compare(mine))
    decided = []       # (verdict, target, unit, fewest seeds, intervals tested) per claim row
    looks = []         # the stopping rule's look, where one covers the row (Comparison.look)
    for row in claims.itertuples(index=False):
        comparison = comparisons.get(tuple(getattr(row, k) for k in CLAIM_KEY))
        looks.append("" if comparison is None else comparison.look)
        if comparison is None:
            n = 0 if math.isnan(row.n_runs) else int(row.n_runs)
            verdict = Verdict(NOT_MEASURED if math.isnan(row.reproduced_value) else
                              f"{UNTESTED} (n={n})" if n < MIN_SEEDS else f"{UNTESTED} (cells not named)")
            target, unit, fewest, tested = (0.0 if math.isnan(row.paper_value) else row.paper_value), "", n, 0
        else:
            if is_parity(row.metric):
                comparison = replace(comparison, kind="parity")
            verdict, target, unit = comparison.verdict(PARITY_POINTS), comparison.target, comparison.unit
            fewest = min(side.n for side in (comparison.ours, *comparison.theirs))
            tested = len(comparison.theirs) if verdict.tested else 0
        decided.append((verdict, target, unit, fewest, tested))
    verdicts = [d[0] for d in decided]
    family = {}        # Holm over each paper's tested claims
    for paper in claims.paper.unique():
        rows = [i for i, name in enumerate(claims.paper) if name == paper]
        for i, kept in zip(rows, holm([verdicts[i].p if verdicts[i].tested else None for i in rows])):
            family[i] = kept
    return claims.assign(
        target=[d[1] for d in decided], unit=[d[2] for d in decided], verdict=[v.word for v in verdicts],
        interval=[_intervals(v) for v in verdicts],
        margin=[_second_verdict(v, d[2]) for v, d in zip(verdicts, decided)],
        decided=[v.decided for v in verdicts], look=looks,
        where=[_where(row, v) for row, v in zip(claims.itertuples(index=False), verdicts)],
        power=[v.power_line(d[3], d[2]) for v, d in zip(verdicts, decided)],
        holm=[_holm_word(v, family.get(i)) for i, v in enumerate(verdicts)],
        intervals_tested=[d[4] for d in decided])


def _where(row, verdict: Verdict) -> str:
    """Where a tested claim was tested when that is not the paper's setting: its dataset and reduced protocol
    (FedAnchor on Fashion-MNIST's CNN, FedMix on the MNIST CNN), so a verdict is not read as the paper's own."""
    if not verdict.tested or row.profile == "paper":
        return ""
    return f"{row.dataset} at the {row.profile} protocol (reduced: not the paper's network, rounds or data)"


def _second_verdict(verdict: Verdict, unit: str) -> str:
    """Beside the direction: the paper's margin verdict (ordering claims), or for a parity that holds while
    the 95% interval excludes the target, that it differs too."""
    if verdict.margin is not None:
        return verdict.margin_line(unit)
    if verdict.differs is not None:
        return f"differs as well: 95% {verdict.differs}"
    return ""


def _intervals(verdict: Verdict) -> str:
    """The deciding interval, and the one against the best of theirs by mean where that is another."""
    if verdict.interval is None:
        return ""
    best = f"; best by mean: {verdict.best_by_mean}" if verdict.best_by_mean is not None else ""
    return f"{verdict.interval}{best}"


def _holm_word(verdict: Verdict, kept: bool | None) -> str:
    """The verdict once Holm's step-down has adjusted the paper's family: a hold it does not keep is
    "within noise"; other verdicts stand as they are."""
    if kept is None:
        return ""
    return WITHIN_NOISE if verdict.word == HOLDS and not kept else verdict.word


# The claims table as a reader meets it; its threshold is no paper value ("paper 0, ours 29.3" reads as a miss)
CLAIM_COLUMNS = {"paper": "paper", "setting": "setting", "labeled": "labeled", "method": "claim: ours vs theirs",
                 "metric": "difference", "reproduced_value": "measured (ours − theirs)", "unit": "unit",
                 "target": "tested against", "n_runs": "seeds (fewest side)", "profile": "profile",
                 "verdict": "verdict", "margin": "against the paper's margin (parity: differs as well?)",
                 "look": "stopping rule: look and level", "where": "tested where (if not the paper's setting)",
                 "power": "what the test can decide", "holm": "verdict, Holm-adjusted",
                 "interval": "interval of ours − theirs (95% unless it names its level)"}


def claims_counted(verdicts: pd.Series, decided: pd.Series | None = None) -> str:
    """The summary's "claims holding": holding of those tested, how many of the tested are decided either way
    (direction or the paper's margin, `decided`), then the claims not counted either way (untested, by
    construction, cut off by the run length, not measured)."""
    if not len(verdicts):
        return "—"
    word = verdict_words(verdicts).str.replace(r" \(.*\)$", "", regex=True)      # "untested (n=1)" -> "untested"
    tested = word.isin(TESTED)
    out = [f"{int((word == HOLDS).sum())} of {int(tested.sum())} tested"]
    if decided is not None:
        out[0] += f" ({int((tested & decided.astype(bool)).sum())} decided)"
    for name in (UNTESTED, BY_CONSTRUCTION, CUT_OFF, NOT_MEASURED):
        if (word == name).any():
            out.append(f"{int((word == name).sum())} {name}")
    return ", ".join(out)


def summary(frame: pd.DataFrame, far_cell_causes: FarCellCauses | None = None,
            claim_comparisons: ClaimComparisons | None = None) -> pd.DataFrame:
    """Per paper: the cells with a printed value, how many were measured at the paper's protocol or a
    reduced one, how many land within WITHIN_POINTS, of those beyond it how many have a cause under the
    paper's pre-registered rule and, apart, how many of the others only an exploratory reading brings near
    (`far_cell_causes`; "—" for a paper without), how many wait for data, and the claims' verdicts
    (claim_verdicts with `claim_comparisons`; claims_counted)."""
    cells = best_protocol(frame[~is_claim(frame) & frame.paper_value.notna()])
    measured = cells[cells.n_runs > 0]
    rows = []
    for paper in sorted(frame.paper.unique()):
        mine, done = cells[cells.paper == paper], measured[measured.paper == paper]
        judged = claim_verdicts(frame[frame.paper == paper], claim_comparisons)
        verdicts = judged.verdict
        caused, exploratory = _far_cells_with_cause(paper, frame, done, far_cell_causes or {})
        rows.append({"paper": paper, "cells": len(mine),
                     "at paper protocol": int((done.profile == "paper").sum()),
                     "reduced only": int((done.profile != "paper").sum()),
                     f"within {WITHIN_POINTS:g} points": int(((done.reproduced_value - done.paper_value).abs()
                                                               <= WITHIN_POINTS).sum()),
                     "beyond it, pre-registered cause": caused,
                     "beyond it, exploratory only": exploratory,
                     "needs data": int((mine.status == NEEDS_DATA).sum()),
                     # a value with no run behind it: worked out from the paper's setting (FedAnchor's
                     # communication overhead), so the columns add up to the cells
                     "computed": int(((mine.n_runs == 0) & mine.reproduced_value.notna()).sum()),
                     "claims holding": claims_counted(verdicts, judged.get("decided"))})
    return pd.DataFrame(rows)


def _far_cells_with_cause(paper: str, frame: pd.DataFrame, done: pd.DataFrame, far: FarCellCauses) -> tuple[str, str]:
    """('k of n (m computations; ...)', 'e'): of the paper's n measured cells beyond WITHIN_POINTS (m distinct
    sets of runs, said where cells share one: FedAvg's Non-IID-I and -II), the k with a cause under its
    pre-registered rule, and the e others only an exploratory reading brings near (not a cause: what a later
    pre-registration may test), as `far[paper]` marks them; '—' for a paper whose notebooks measure none."""
    if paper not in far:
        return "—", "—"
    causes = far[paper](frame[frame.paper == paper])
    cells = done[(done.reproduced_value - done.paper_value).abs() > WITHIN_POINTS]
    caused = causes.cause_measured.astype(bool)
    near = causes.exploratory_near.astype(bool) & ~caused if "exploratory_near" in causes else caused & False
    key = [k for k in KEY if k != "paper"]
    count = lambda rows: len(cells.merge(causes.loc[rows, key].drop_duplicates(), on=key))
    # cells computed by the same runs (FedAvg's Non-IID-I and -II: one run identity) are one computation
    runs = cells.run_ids.map(lambda ids: "" if pd.isna(ids) else " ".join(sorted(str(ids).split())))
    computations = runs[runs != ""].nunique() + int((runs == "").sum())
    notes = [f"{computations} computation{'s' if computations != 1 else ''}"] if computations != len(cells) else []
    if "prospective" in causes and count(caused):
        ahead = caused & causes.prospective.eq(True)
        # cells share a reading where it does not read what tells them apart (Table 6's server alone)
        values = causes.loc[caused, "pre-registered reading"].round(2).nunique() if "pre-registered reading" in causes \
            else count(caused)
        notes.append(f"{count(ahead)} prospective, {count(caused) - count(ahead)} post hoc; on {values} distinct "
                     f"reading value{'s' if values != 1 else ''}")
    if "reading_missed" in causes and count(causes.reading_missed.astype(bool)):
        missed = causes.reading_missed.astype(bool)
        notes.append(f"the same reading missed {count(missed)} ({count(missed & causes.prospective.eq(True))} "
                     "prospective)")
    said = f"{count(caused)} of {len(cells)}" + (f" ({'; '.join(notes)})" if notes else "")
    return said, str(count(near))


def replace_readme_block(start: str, end: str, body: str, readme: Path | None = None) -> bool:
    """Put `body` between the `start` and `end` markers of `readme` (default: the project's README.md),
    atomically; False when the file or a marker is missing."""
    readme = Path(readme) if readme is not None else project_root() / "README.md"
    if not readme.exists():
        return False
    with exclusive(project_root() / ".README.lock"):      # bench and reproduce both write blocks of it
        text = readme.read_text()
        if start not in text or end not in text:
            return False
        new = text[:text.index(start) + len(start)] + "\n" + body + "\n" + text[text.index(end):]
        atomic_write_text(readme, new)
    return True


def round_curves(cells: Sequence[Cell], key: str = "accuracy", store: RunStore | None = None) -> pd.DataFrame:
    """A per-round metric (`key`: test accuracy, or e.g. pseudo_label_accuracy, selected) of each
    cell's finished runs, averaged over seeds: one row per (setting, labeled, dataset, method,
    round), with the seeds' sample std (`<key>_std`, NaN at one seed). Cells without finished runs, and rounds
    that did not log `key`, contribute nothing."""
    store = store or RunStore()
    rows = []
    for cell in cells:
        per_round: dict[int, list[float]] = {}
        for cfg in cell.configs:
            result = store.load(cfg)
            for m in (result.metrics if result is not None else []):
                if key in m:
                    per_round.setdefault(m["round"], []).append(m[key])
        rows += [{"setting": cell.setting, "labeled": cell.labeled, "dataset": cell.dataset, "method": cell.method,
                  "round": r, key: float(np.mean(v)), f"{key}_std": float(np.std(v, ddof=1)) if len(v) > 1 else math.nan,
                  "n_runs": len(v)} for r, v in sorted(per_round.items())]
    return pd.DataFrame(rows, columns=["setting", "labeled", "dataset", "method", "round", key, f"{key}_std", "n_runs"])
