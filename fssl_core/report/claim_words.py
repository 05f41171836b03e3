"""The claims in words, from their rows (report.tables.claim_verdicts): how many of a paper's claims hold, are
refuted, are decided against the paper's margin alone, or stay undecided with what their tests could detect, and the
holds Holm keeps. Pure functions of the rows; what a report appends to a verdict ("refuted; explained in …") is
read past, so every tested claim counts."""
from __future__ import annotations

import re

import pandas as pd

from .claim_test import ABOVE_MARGIN, BELOW_MARGIN, HOLDS, REFUTED, TESTED, WITHIN_NOISE


def verdict_words(verdicts: pd.Series) -> pd.Series:
    """The test's word of each verdict, whatever a report appended ("refuted; explained in …" -> "refuted")."""
    return verdicts.astype(str).str.split(";").str[0].str.strip()


def multiplicity(claims: pd.DataFrame) -> str:
    """One line per paper: its tested claims, the intervals they rest on, and the holds Holm keeps."""
    lines = []
    for paper, part in claims.groupby("paper", sort=True):
        tested = part[verdict_words(part.verdict).isin(TESTED)]
        if not len(tested):
            continue
        holds = int((verdict_words(tested.verdict) == HOLDS).sum())
        kept = int((verdict_words(tested.holm) == HOLDS).sum())
        lines.append(f"{paper}: {len(tested)} claims tested on {int(tested.intervals_tested.sum())} intervals; "
                     f"{holds} hold per claim, {kept} of them under Holm's step-down at 5% over the {len(tested)}")
    return "; ".join(lines)


_DETECTS = re.compile(r"detects ≥ ([0-9.]+) (.+)\)$")


def claims_in_words(claims: pd.DataFrame) -> str:
    """Per paper with tested claims, one plain sentence from its claim rows (`claim_verdicts`): how many hold,
    are refuted, are decided against the paper's margin alone (below or above it) or stay undecided, the
    smallest differences the undecided ones could have detected (from their power lines, per unit), and the
    holds Holm's step-down keeps. Every tested claim counts, whatever a report appended to its verdict."""
    sentences = []
    for paper, part in claims.groupby("paper", sort=True):
        words = verdict_words(part.verdict)
        tested = part[words.isin(TESTED)]
        if not len(tested):
            continue
        word = verdict_words(tested.verdict)
        margin = tested.margin.astype(str) if "margin" in tested else pd.Series("", index=tested.index)
        by_margin = (word == WITHIN_NOISE) & (margin.str.startswith(BELOW_MARGIN) | margin.str.startswith(ABOVE_MARGIN))
        count = {w: int((word == w).sum()) for w in (HOLDS, REFUTED)}
        undecided = int(((word == WITHIN_NOISE) & ~by_margin).sum())
        ranges = {}
        for line in tested.power[(word == WITHIN_NOISE) & ~by_margin]:
            hit = _DETECTS.search(str(line))
            if hit:
                ranges.setdefault(hit.group(2), []).append(float(hit.group(1)))
        detect = "; ".join(f"{min(v):.2f} to {max(v):.2f} {unit}" if len(v) > 1 else f"{v[0]:.2f} {unit}"
                           for unit, v in sorted(ranges.items()))
        margin_only = ""
        if by_margin.any():
            below = int((by_margin & margin.str.startswith(BELOW_MARGIN)).sum())
            margin_only = (f", {int(by_margin.sum())} more are decided by the paper's margin alone ({below} below it, "
                           f"{int(by_margin.sum()) - below} above it; the direction within noise)")
        rest = f"{undecided} undecided" + (
            " (`within noise`: the test could not tell the difference from none, which is not parity"
            + (f"; with 80% power it would have caught one of {detect}, and more seeds shrink that" if detect else "")
            + ")" if undecided else "")
        holm_words = verdict_words(tested.holm)
        kept = (f"; Holm's step-down over the {len(tested)} keeps {int((holm_words == HOLDS).sum())} of the "
                f"{count[HOLDS]} holds" if count[HOLDS] else "")
        away = int((tested["where"].astype(str) != "").sum()) if "where" in tested else 0
        elsewhere = (f" ({'all' if away == len(tested) else away} tested away from the paper's setting, at a reduced "
                     "protocol: not the paper's own verdicts)" if away else "")
        sentences.append(f"{paper}: of {len(tested)} claims tested{elsewhere}, {count[HOLDS]} hold, {count[REFUTED]} are "
                         f"refuted{margin_only} and {rest}{kept}.")
    return " ".join(sentences)
