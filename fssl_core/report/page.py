"""The report as a reader meets it: results/REPORT.md and the README's summary, written from the published rows.

report/tables.py computes (cells, verdicts, the summary's counts); this module only lays them out. What is particular to
a paper (its far-cell causes, its claims' cells, the sentence introducing each of its tables, where a refuted claim
is explained) is passed in by the caller (papers.table_intros, papers.claim_explanations).
"""
from __future__ import annotations

import io
import math
import re
import textwrap
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .claim_test import MIN_SEEDS, POWER, REFUTED
from ..paths import SEPARATE_PROFILES, results_dir
from ..profiles import PROFILES
from .claim_words import claims_in_words, multiplicity
from .tables import (CLAIM_COLUMNS, NEEDS_DATA, PARITY_POINTS, README_END, README_START, WITHIN_POINTS,
                     ClaimComparisons, FarCellCauses, best_protocol, claim_verdicts, comparison_table,
                     is_claim,
                     notebooks_of_tables, published_results, replace_readme_block, summary)
from ..store import atomic_write_text


# (paper, table id) -> the sentence introducing that table (papers.table_intros); (paper, claim metric) -> where a
# refuted claim of it is explained (papers.claim_explanations)
TableIntros = Mapping[tuple[str, str], str]
ClaimExplanations = Mapping[tuple[str, str], str]


def merge_results(profile_name: str, notebook_seconds: dict[str, float] | None = None, *,
                  far_cell_causes: FarCellCauses, claim_comparisons: ClaimComparisons,
                  table_intros: TableIntros | None = None, claim_explanations: ClaimExplanations | None = None,
                  display_names: Mapping[str, str] | None = None) -> Path:
    """Merge the profile's results/*.csv into report.csv and REPORT.md; the README's summary follows
    the committed results (quick and paper), never a smoke or headline slice. A pure function of the
    rows: the papers' pieces (`far_cell_causes`, `claim_comparisons`) read them, nothing reruns."""
    folder = results_dir(profile_name)
    frame = published_results(folder)
    atomic_write_text(folder / "report.csv", frame.to_csv(index=False))
    atomic_write_text(folder / "REPORT.md", render_markdown(frame, notebook_seconds or {}, profile_name,
                                                            far_cell_causes=far_cell_causes,
                                                            claim_comparisons=claim_comparisons,
                                                            table_intros=table_intros,
                                                            claim_explanations=claim_explanations,
                                                            display_names=display_names,
                                                            notebooks=notebooks_of_tables(folder)))
    if profile_name not in SEPARATE_PROFILES:
        replace_readme_block(README_START, README_END, readme_summary(frame, far_cell_causes, claim_comparisons))
        replace_readme_block(GLANCE_START, GLANCE_END, at_a_glance(summary(frame, far_cell_causes, claim_comparisons),
                                                                   display_names or {}))
    return folder / "REPORT.md"


GLANCE_START, GLANCE_END = "<!-- at-a-glance:start -->", "<!-- at-a-glance:end -->"


def _claims_said(counted: str, away: bool) -> str:
    """claims_counted's "k of n tested (d decided), rest" as a clause; `away`: tested where the paper's cells
    were not measured (another data set, a reduced protocol), so not the paper's own verdicts."""
    found = re.match(r"(\d+) of (\d+) tested(?: \((\d+) decided\))?(?:, )?(.*)", counted)
    if not found:
        return "no claim tested"
    held, tested, decided, rest = found.groups()
    where = " (away from the paper's setting, at a reduced protocol)" if away else ""
    return (f"of {tested} claims tested{where}, {held} hold and {decided or held} are decided either way"
            + (f"; besides, {rest}" if rest else ""))


def at_a_glance(table: pd.DataFrame, display_names: Mapping[str, str]) -> str:
    """One plain sentence a paper, from its row of `summary`: its printed cells, how many were measured and at
    which protocol, how many land within WITHIN_POINTS, how many wait for data this machine lacks, and how its
    claims fell (claims_counted's words). The README opens with these."""
    lines = []
    for row in table.to_dict("records"):
        name, measured = display_names.get(row["paper"], row["paper"]), row["at paper protocol"] + row["reduced only"]
        said = [f"{row['cells']} printed cells"]
        if measured:
            protocols = " and ".join(part for part in (
                f"{row['at paper protocol']} at the paper's protocol" if row["at paper protocol"] else "",
                f"{row['reduced only']} at a reduced one only" if row["reduced only"] else "") if part)
            said.append(f"{measured} measured ({protocols}), {row[f'within {WITHIN_POINTS:g} points']} of them within "
                        f"{WITHIN_POINTS:g} points of the paper")
        else:
            said.append("none measured")
        if row["needs data"]:
            said.append(f"{row['needs data']} need data this machine lacks (CIFAR-10/100, SVHN)")
        if row["computed"]:
            said.append(f"{row['computed']} worked out from the paper's setting, no run")
        said.append(_claims_said(str(row["claims holding"]), away=not measured))
        lines.append(f"- **{name}**: " + "; ".join(said) + ".")
    return "\n".join(lines)


def readme_summary(frame: pd.DataFrame, far_cell_causes: FarCellCauses | None = None,
                   claim_comparisons: ClaimComparisons | None = None) -> str:
    """The README's results block: the summary table, its columns said in wrapped prose, and where the claims
    are (every claim row, its verdict, power line and Holm-adjusted verdict are in REPORT.md's summary)."""
    table = summary(frame, far_cell_causes, claim_comparisons)
    words = claims_in_words(claim_verdicts(frame, claim_comparisons))
    said = (f"Per paper: its printed cells, counted at the best protocol measured (the paper's, else a reduced one); "
            f"those within {WITHIN_POINTS:g} points of the paper; of the farther ones, those its one pre-registered "
            f"cause reading (run at least {MIN_SEEDS} times) brings within it, marked prospective or post hoc by "
            "git, and those only an exploratory reading brings near (not a cause); where far cells share their runs "
            "(FedAvg reads no unlabeled sample, so its Non-IID-I and -II cells are one computation), how many "
            f"computations they are; the claims' verdicts (Welch's t, untested under {MIN_SEEDS} seeds a side; "
            "`decided` where the direction or the paper's own printed margin is decided; the claims undecided both ways "
            "go under a stopping rule fixed before their runs, `python -m fssl_core reproduce --until-decided`).")
    plain = ("In plain words: a far cell counts as explained only by its paper's one cause reading fixed in code, run "
             f"at least {MIN_SEEDS} times, and only as prospective where git shows that no run of that computation, under "
             "any id or seed, was committed before the reading was fixed (a reading seen before, then retrained under new "
             "ids, is post hoc and replicated); our seeds' spread reaching the paper's value explains nothing. "
             + words) if words else ""
    fill = lambda text: textwrap.fill(text, 110, break_on_hyphens=False)      # never split a command at its hyphen
    return (fill(said) + "\n\n" + _markdown_table(table) + "\n" + (fill(plain) + "\n\n"
            if plain else "") + "Every claim with its verdict, what its test can decide and its Holm-adjusted verdict, "
            "and every cell: [results/REPORT.md](results/REPORT.md).\n")


def summary_markdown(frame: pd.DataFrame, far_cell_causes: FarCellCauses | None = None,
                     claim_comparisons: ClaimComparisons | None = None,
                     claim_explanations: ClaimExplanations | None = None,
                     display_names: Mapping[str, str] | None = None) -> str:
    table = summary(frame, far_cell_causes, claim_comparisons)
    claims = explained(claim_verdicts(frame, claim_comparisons), claim_explanations or {})
    out = io.StringIO()
    out.write("Cells are the paper's printed values; each is counted at its best protocol measured (the paper's, "
              f"else a reduced one). `within {WITHIN_POINTS:g} points` counts measured cells only; `beyond it, "
              "pre-registered cause`: of the measured cells farther from the paper, those its paper's one cause reading "
              f"(`PRE_REGISTERED` in its causes.py), run at least {MIN_SEEDS} times, brings within it; `prospective` where "
              "every run of that reading was first committed after the commit that fixed the reading (git decides), "
              "`post hoc` where some existed before it; `the same reading missed`: far cells that reading was also run on at "
              f"least {MIN_SEEDS} times and that it leaves far (the prospective check: the fixed reading applied to every "
              "cell it was run on, its hits and misses both counted); `computations`, where fewer than the cells: far cells that share their runs "
              "are one computation (a method that reads no unlabeled sample, FedAvg, has one run identity on two splits that "
              "differ only in the unlabeled data, `SAME_LABELED_SPLIT`). Our seeds' spread is no cause: a far cell whose interval holds the "
              "paper is undecided, not explained. `beyond it, exploratory only`: of the rest, those only another reading "
              "(ours test-selected, part of the authors' computation, ...) brings within it: exploratory, not a cause. "
              "Reruns of the authors' own code say where a printed value comes from, not why ours differs: provenance, "
              "not a cause (`measured_cause`, `provenance` in the notebook).\n\n")
    out.write(_markdown_table(table))
    if len(claims):
        out.write("\nClaims: ours against the paper's statement, each tested on the cells it compares by one function "
                  f"(`fssl_core/report/claim_test.py`). With fewer than {MIN_SEEDS} seeds on a side (`seeds (fewest side)`) a claim is "
                  "`untested` and counts neither way; from 3, Welch's t at its Welch–Satterthwaite degrees of freedom, "
                  "two-sided at 5%: an ordering claim `holds` where the 95% interval of ours − theirs lies above the "
                  "target for every one of theirs (a claim against the best baseline is tested against each "
                  "baseline), is `refuted` where it lies below for one (each of k intervals then at 5%/k, Bonferroni), "
                  "else is `within noise`. Beside the direction, `against the paper's margin` tests the paper's own "
                  "ours − theirs (its printed cells): `below the paper's margin` where an interval lies wholly below it, "
                  "`above` where every one lies above it, else `consistent with`; a claim decided either way counts as "
                  "decided. A parity claim is an equivalence test (TOST): it holds where the 90% interval lies within "
                  f"±{PARITY_POINTS:g} point of the target (the band justified in report/tables.py: the widest difference "
                  "the paper itself calls comparable) and is refuted where it lies wholly outside; a parity that holds "
                  "while the 95% interval excludes the target says `differs as well`. `by construction`: implied by a "
                  "reading of the paper, no evidence; `cut off "
                  "by the run length`: the metric's best round is the run's last. `claims holding` above counts "
                  "holding of those tested. `interval of ours − theirs`: 95% unless it names its level (90% for a parity's TOST, "
                  "1 − 5%/k for a refutation or a margin verdict against k cells, Bonferroni), the one that decided (against several "
                  "cells: the one it falls below, else the one it clears least), and beside it the one against the best "
                  "of theirs by mean where that is another. `tested against`: the threshold of the test (0 for \"ours "
                  "above theirs\"), not a value the paper printed. `within noise` is no parity: `what the test can "
                  f"decide` gives the smallest difference from the target its test detects with {POWER:.0%} power at its "
                  "seeds and spread; more seeds shrink it. Each claim is tested at 5% on its own; `verdict, "
                  "Holm-adjusted` applies Holm's step-down over the paper's tested claims (family-wise 5%). "
                  f"{multiplicity(claims)}.\n\nIn plain words: {claims_in_words(claims)}\n\n")
        shown = claims.assign(**{column: [named(str(text), display_names or {}) for text in claims[column]]
                                 for column in ("method", "interval")})
        out.write(_markdown_table(shown[list(CLAIM_COLUMNS)].rename(columns=CLAIM_COLUMNS)))
    return out.getvalue()


def named(text: str, display_names: Mapping[str, str]) -> str:
    """`text` (a method id, or a claim such as "fedsiam_d vs best baseline") with each method id in it by the
    paper's name for it ("FedSiam-D vs best baseline"); an id inside a longer one (fedsiam_d in fedsiam_d_kl) is
    left to the longer one's name."""
    if not display_names:
        return text
    ids = sorted(display_names, key=len, reverse=True)
    return re.sub(r"\b(" + "|".join(map(re.escape, ids)) + r")\b", lambda m: display_names[m.group(1)], text)


def explained(claims: pd.DataFrame, explanations: ClaimExplanations) -> pd.DataFrame:
    """A refuted claim's verdict with where it is explained ("refuted; explained in notebooks/...")."""
    where = [explanations.get((paper, metric)) if verdict == REFUTED else None
             for paper, metric, verdict in zip(claims.paper, claims.metric, claims.verdict)]
    return claims.assign(verdict=[f"{v}; explained in {w}" if w else v for v, w in zip(claims.verdict, where)])


def results_tables_markdown(frame: pd.DataFrame, papers: Sequence[str],
                            display_names: Mapping[str, str] | None = None) -> str:
    """The cells of `papers` measured at the paper's own protocol, one table per (table, dataset,
    metric): a row per column of the paper's table (setting, labeled), a column per method (its
    display name), each entry ours ± the std over seeds, the paper's value in parentheses. What a
    paper's README shows; every row, reduced ones included, is in results/REPORT.md."""
    names = display_names or {}
    mine = frame[frame.paper.isin(list(papers)) & ~is_claim(frame) & frame.paper_value.notna()]
    rows = best_protocol(mine) if len(mine) else mine
    rows = rows[(rows.profile == "paper") & (rows.n_runs > 0) & rows.reproduced_value.notna()]
    if rows.empty:
        return ("No cell of this paper has been measured at its protocol yet; its reduced-protocol rows are in "
                "[results/REPORT.md](../../../results/REPORT.md).\n")
    out = io.StringIO()
    out.write("Ours at the paper's protocol, mean ± std over seeds (the paper's value in parentheses), from the "
              "committed results; every row, reduced ones included, is in "
              "[results/REPORT.md](../../../results/REPORT.md).\n")
    for (paper, table, dataset, metric), part in rows.groupby(["paper", "table", "dataset", "metric"], sort=False):
        methods = list(dict.fromkeys(part.method))
        out.write(f"\n**{paper} · {table} · {dataset} · {metric}**\n\n")
        out.write("| setting | labeled | " + " | ".join(names.get(m, m) for m in methods) + " | seeds |\n")
        out.write("|---|---|" + "---|" * len(methods) + "---|\n")
        for (setting, labeled), column in sorted(part.groupby(["setting", "labeled"]), key=_column_order):
            by_method = {r.method: r for r in column.itertuples()}
            entries = []
            for m in methods:
                r = by_method.get(m)
                if r is None:
                    entries.append("")
                    continue
                spread = "" if math.isnan(r.reproduced_std) else f" ± {r.reproduced_std:.2f}"
                entries.append(f"{r.reproduced_value:.2f}{spread} ({r.paper_value:g})")
            seeds = sorted({int(n) for n in column.n_runs})
            n = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
            out.write(f"| {setting} | {labeled} | " + " | ".join(entries) + f" | {n} |\n")
    return out.getvalue()


def _column_order(group) -> tuple:
    """A table column's place: by its labeled amount (γ or a label count, as a number), then its setting."""
    (setting, labeled), _ = group
    try:
        return (0, float(labeled), setting)
    except ValueError:
        return (1, 0.0, f"{labeled} {setting}")


def render_markdown(frame: pd.DataFrame, notebook_seconds: dict[str, float], profile_name: str = "quick",
                    far_cell_causes: FarCellCauses | None = None,
                    claim_comparisons: ClaimComparisons | None = None, table_intros: TableIntros | None = None,
                    claim_explanations: ClaimExplanations | None = None,
                    display_names: Mapping[str, str] | None = None,
                    notebooks: Mapping[tuple[str, str], str] | None = None) -> str:
    """REPORT.md: the summary, then each table's rows; `notebooks`: (paper, table) -> the notebook that fills
    its rows (tables.notebooks_of_tables), named in a table's line on rows that wait for data."""
    out = io.StringIO()
    # quick and paper publish into one folder: the title names the profiles of the rows, not only the last job's
    profiles = sorted(set(frame.profile) & set(PROFILES)) if "profile" in frame else []
    profiles = profiles or [profile_name]
    out.write(f"# Reproduced vs paper (profile{'s' if len(profiles) > 1 else ''} {', '.join(profiles)})\n\n"
              f"Generated by {' and '.join(f'`python -m fssl_core reproduce --profile {p}`' for p in profiles)} (each "
              "row's `profile` is the protocol it was measured at); every reproduced number comes from runs in the run "
              "store. `reduced` rows ran fewer "
              "seeds, rounds or local epochs than the paper (profiles `headline`, `quick`); `ok` rows ran its protocol "
              "with all its seeds; `at-chance` rows hold a run whose final accuracy is at most 1.5× chance (shown: the "
              "method did not learn there); `diverged` rows a run whose loss became NaN (no value).\n")
    if profile_name == "smoke":
        out.write("\n**Smoke profile: a wiring check of 2-round runs. Its numbers measure nothing about the methods "
                  "and are not shown; see results/REPORT.md for measurements.**\n")
        frame = frame.assign(reproduced_value=np.nan, reproduced_std=np.nan)
    out.write("\n## Summary\n\n" + summary_markdown(frame, far_cell_causes, claim_comparisons, claim_explanations,
                                                     display_names))
    for (paper, table), part in frame.groupby(["paper", "table"], sort=False):
        out.write(f"\n## {paper} — {table}\n\n")
        notebook = (notebooks or {}).get((paper, table), f"{paper}_{table}")
        if (paper, table) in (table_intros or {}):
            out.write(table_intros[(paper, table)] + "\n\n")
        waiting = part[part.status == NEEDS_DATA]
        shown = part[part.status != NEEDS_DATA]
        if len(shown):
            table = comparison_table(shown)
            out.write(_markdown_table(table.assign(method=[named(m, display_names or {}) for m in table.method])))
        if len(waiting):
            per = ", ".join(f"{d} ({n})" for d, n in waiting.dataset.value_counts().sort_index().items())
            profile = "paper" if "paper" in set(waiting.profile) else sorted(set(waiting.profile))[0]
            out.write(f"\n{len(waiting)} row(s) need data not on the measuring machine: {per}. Where the data are "
                      "($FSSL_DATA, or downloaded by torchvision when online), `python -m fssl_core reproduce --only "
                      f"{notebook} --profile {profile}` fills them.\n")
    if notebook_seconds:
        out.write("\n## Notebook run times\n\nEach notebook's last measured execution (notebook_seconds.json); "
                  "a notebook whose runs were already in the store reads them back in seconds.\n\n"
                  "| notebook | seconds |\n|---|---|\n")
        for name, secs in notebook_seconds.items():
            out.write(f"| {name} | {secs:.0f} |\n")
    return out.getvalue()


def _markdown_table(frame: pd.DataFrame) -> str:
    def fmt(v):
        if isinstance(v, float):
            return "" if math.isnan(v) else f"{v:g}"
        return str(v)
    head = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns) + "\n"
    body = "".join("| " + " | ".join(fmt(v) for v in row) + " |\n" for row in frame.itertuples(index=False))
    return head + body


