"""The one test every paper's claims go through: ours against theirs, cell by cell, by Welch's t.

Each side of a claim is a cell's mean over seeds, its sample std (ddof = 1) and its seeds, as the results
CSVs publish them; a paper names, per claim row, the cells it compares (a `Comparison`), and
`claim_test` gives the verdict (report/tables.py's claim_verdicts puts it beside the row).

Rules (two-sided, 5%):
- n < 3 seeds on either side: `untested (n=k)`, k the fewest seeds of a side. Neither holding nor
  refuted: two seeds give a standard deviation from one degree of freedom, one seed none.
- n ≥ 3: Welch's t. The difference d = ours − theirs has standard error se = sqrt(s₁²/n₁ + s₂²/n₂)
  and Welch–Satterthwaite degrees of freedom ν = se⁴ / ((s₁²/n₁)²/(n₁−1) + (s₂²/n₂)²/(n₂−1)); its 95%
  interval is d ± t₀.₉₇₅,ν · se. (Both sides with std 0, as the bytes of a deterministic upload:
  se = 0 and the interval is the point d.)
- an ordering claim ("ours is above theirs", `kind="above"`) holds where the interval of
  ours − theirs lies wholly above `target` for EVERY one of theirs (a claim against the best of
  several baselines compares with each, never with their maximum, which would bias it toward
  refutation); it is refuted where the interval lies wholly below `target` for ANY one of theirs;
  else it is `within noise`.
- a parity claim ("comparable", `kind="parity"`) holds where the interval of ours − theirs lies
  within target ± `points` (report's PARITY_POINTS unless the paper gives a bound) for every one of
  theirs, is refuted where it lies wholly outside that band for any one, else `within noise`.
- a claim true by a reading of the paper (`by_construction`: FedSiam's upload ranking Π < D < MT once τ
  is the fraction of layers uploaded) says `by construction`, no evidence either way; one whose metric
  the run's length cuts off (`cut_off`) says `cut off by the run length`; an unmeasured side (NaN mean),
  `not measured`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from scipy.stats import t as student_t

MIN_SEEDS = 3                 # a claim is tested only from this many seeds a side
ALPHA = 0.05                  # two-sided
POWER = 0.80                  # of the smallest difference an undecided claim's test detects
HOLDS, REFUTED, WITHIN_NOISE = "holds", "refuted", "within noise"
BY_CONSTRUCTION, CUT_OFF, NOT_MEASURED = "by construction", "cut off by the run length", "not measured"
UNTESTED = "untested"         # written "untested (n=k)"
TESTED = (HOLDS, REFUTED, WITHIN_NOISE)


@dataclass(frozen=True)
class Side:
    """One cell of a comparison: its mean over seeds, sample std (ddof = 1; NaN with one seed), seeds,
    and `name`, the cell as a reader finds it (e.g. "fedsem accuracy")."""
    name: str
    mean: float
    std: float
    n: int

    def scaled(self, factor: float, name: str | None = None) -> "Side":
        """factor · the cell (a claim on a ratio, e.g. "half the bytes": ours − 0.5 · theirs)."""
        return Side(name or f"{factor:g} × {self.name}", factor * self.mean, abs(factor) * self.std, self.n)


@dataclass(frozen=True)
class Interval:
    """The 95% Welch interval of ours − one of theirs (`against`), with its degrees of freedom."""
    against: str
    difference: float
    low: float
    high: float
    df: float

    @property
    def se(self) -> float:
        return 0.0 if math.isinf(self.df) else (self.high - self.low) / (2 * t_quantile(self.df))

    @property
    def detectable(self) -> float:
        """The smallest true difference (from the claim's target) this test finds at 5% two-sided with
        POWER: (t₀.₉₇₅,ν + t_POWER,ν) · se, the usual normal-approximation formula with t quantiles."""
        if math.isinf(self.df):
            return 0.0
        return (t_quantile(self.df) + t_quantile(self.df, POWER)) * self.se

    def p(self, target: float, upper: float | None = None) -> float:
        """Two-sided p of "ours − theirs differs from `target`" (one side's p doubled, the side of the
        difference); with `upper`, of "lies within [target, upper]" (the larger one-sided p doubled:
        the 95% interval inside the band is p < 0.05)."""
        se = self.se
        if se == 0.0:
            inside = self.difference > target if upper is None else target <= self.difference <= upper
            return 0.0 if inside else 1.0
        if upper is None:
            return float(min(1.0, 2 * student_t.sf((self.difference - target) / se, self.df)))
        worst = max(student_t.sf((self.difference - target) / se, self.df),
                    student_t.sf((upper - self.difference) / se, self.df))
        return float(min(1.0, 2 * worst))

    def __str__(self) -> str:
        df = "∞" if math.isinf(self.df) else f"{self.df:.1f}"
        return f"[{self.low:.2f}, {self.high:.2f}] vs {self.against} (df {df})"


@dataclass(frozen=True)
class Verdict:
    """What claim_test decided (`word`); for a tested claim, the interval that decided it, the interval
    against the best of theirs by mean where that is another (`best_by_mean`), and `p`: the claim's
    p-value, the largest over its intervals (every one must clear; Holm adjusts it over a family)."""
    word: str
    interval: Interval | None = None
    best_by_mean: Interval | None = None
    p: float | None = None

    def __str__(self) -> str:
        return self.word

    @property
    def tested(self) -> bool:
        return self.word in TESTED

    @property
    def detectable(self) -> float | None:
        """The smallest difference the deciding test detects with POWER (80%) at its n and spread."""
        return None if self.interval is None else self.interval.detectable

    def power_line(self, fewest: int, unit: str = "points") -> str:
        """What an undecided verdict can say: "undecided at n = 3 (detects ≥ 4.1 points)", in the claim's unit."""
        if self.word != WITHIN_NOISE or self.detectable is None:
            return ""
        return f"undecided at n = {fewest} (detects ≥ {self.detectable:.2f} {unit or 'points'})"


@dataclass(frozen=True)
class Comparison:
    """A claim as the cells it compares: `ours` against each of `theirs` (see the module's rules).
    `by_construction` names the reading that implies the claim; `cut_off` says what the run's length
    cuts off; `unit`: what the published difference (ours − theirs, or a saving) is counted in."""
    ours: Side
    theirs: tuple[Side, ...]
    kind: str = "above"
    target: float = 0.0
    points: float | None = None
    by_construction: str | None = None
    cut_off: str | None = None
    unit: str = "points"

    def verdict(self, parity_points: float) -> Verdict:
        return claim_test(self.ours, self.theirs, kind=self.kind, target=self.target,
                          points=parity_points if self.points is None else self.points,
                          by_construction=self.by_construction is not None, cut_off=self.cut_off is not None)


def t_quantile(df: float, p: float = 1 - ALPHA / 2) -> float:
    """Student's t quantile at `df` degrees of freedom (df = ∞: the normal's)."""
    if df <= 0 or math.isnan(df):
        raise ValueError(f"t_quantile df={df}: must be > 0")
    return float(student_t.ppf(p, df))


def welch(ours: Side, theirs: Side) -> Interval:
    """The 95% interval of ours − theirs by Welch's t at its Welch–Satterthwaite degrees of freedom."""
    for side in (ours, theirs):
        if side.n < 2 or math.isnan(side.std):
            raise ValueError(f"welch: side {side.name!r} has n={side.n}, std={side.std}: needs n ≥ 2 and a std")
    va, vb = ours.std ** 2 / ours.n, theirs.std ** 2 / theirs.n        # each mean's variance
    se = math.sqrt(va + vb)
    d = ours.mean - theirs.mean
    if se == 0.0:
        return Interval(theirs.name, d, d, d, math.inf)
    df = (va + vb) ** 2 / (va ** 2 / (ours.n - 1) + vb ** 2 / (theirs.n - 1))
    half = t_quantile(df) * se
    return Interval(theirs.name, d, d - half, d + half, df)


def claim_test(ours: Side, theirs: Sequence[Side], kind: str = "above", target: float = 0.0, points: float = 1.0,
               by_construction: bool = False, cut_off: bool = False) -> Verdict:
    """The verdict on "ours against each of `theirs`" under the module's rules: `kind` "above" (the
    difference above `target` for every one of theirs) or "parity" (within target ± `points` for
    every one). Checked in this order: not measured, by construction, cut off by the run length,
    untested (n=k), then Welch's t."""
    if kind not in ("above", "parity"):
        raise ValueError(f"claim_test kind={kind!r}: must be 'above' or 'parity'")
    if not theirs:
        raise ValueError("claim_test theirs=(): a claim compares with at least one cell")
    sides = (ours, *theirs)
    if any(math.isnan(s.mean) for s in sides):
        return Verdict(NOT_MEASURED)
    if by_construction:
        return Verdict(BY_CONSTRUCTION)
    if cut_off:
        return Verdict(CUT_OFF)
    fewest = min(s.n for s in sides)
    if fewest < MIN_SEEDS:
        return Verdict(f"{UNTESTED} (n={fewest})")
    intervals = [welch(ours, other) for other in theirs]
    # the best of theirs by mean: the interval a reader expects beside the deciding one
    best = min(intervals, key=lambda i: i.difference) if kind == "above" else \
        max(intervals, key=lambda i: abs(i.difference - target))
    if kind == "above":
        p = max(i.p(target) if i.difference > target else 1.0 for i in intervals)
        below = [i for i in intervals if i.high < target]
        if below:
            decided = min(below, key=lambda i: i.high)
            return Verdict(REFUTED, decided, _other(best, decided), p)
        weakest = min(intervals, key=lambda i: i.low)          # the one of theirs closest to ours
        return Verdict(HOLDS if weakest.low > target else WITHIN_NOISE, weakest, _other(best, weakest), p)
    low, high = target - points, target + points
    p = max(i.p(low, high) for i in intervals)
    outside = [i for i in intervals if i.low > high or i.high < low]
    if outside:
        return Verdict(REFUTED, outside[0], _other(best, outside[0]), p)
    widest = max(intervals, key=lambda i: max(i.high - high, low - i.low))     # the one reaching farthest out
    return Verdict(HOLDS if all(low <= i.low and i.high <= high for i in intervals) else WITHIN_NOISE, widest,
                   _other(best, widest), p)


def _other(best: Interval, decided: Interval) -> Interval | None:
    return None if best is decided else best


def holm(p_values: Sequence[float | None], alpha: float = ALPHA) -> list[bool | None]:
    """Holm's step-down over a family of claims: which of `p_values` (None: a claim not tested) are
    rejected at family-wise level `alpha`; None where untested."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    out: list[bool | None] = [None] * len(p_values)
    going = True
    for rank, (p, i) in enumerate(tested):
        going = going and p <= alpha / (len(tested) - rank)
        out[i] = going
    return out
