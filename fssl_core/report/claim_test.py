"""The one test every paper's claims go through: ours against theirs, cell by cell, by Welch's t.

A side is a cell's mean, std (ddof 1), seeds and printed paper value; a paper names, per claim row, the cells it
compares (a `Comparison`); `claim_test` gives the verdict (report/tables.py's claim_verdicts shows it). Two-sided 5%:
- n < 3 seeds on a side: `untested (n=k)`. From 3, Welch's interval d ± t_ν·se at the Welch–Satterthwaite ν
  (std 0 on both sides, as bytes: the point d).
- ordering ("ours above theirs"): `holds` where the interval of ours − theirs lies above `target` for EVERY one of
  theirs (an intersection-union test: each at α, never against their maximum); `refuted` where it lies below for
  ANY one, each of the k intervals then at α/k (Bonferroni: "below one of k" is a union of k tests); else `within
  noise`. Beside it, the paper's margin m = the paper's own ours − theirs, where it printed every cell: `below the
  paper's margin` where an interval (at α/k) lies below its m, `above` where every one lies above its m, else
  `consistent with`. A claim decided either way (direction or margin) counts as decided.
- parity ("comparable"): an equivalence test (TOST, Schuirmann 1987): holds where the 90% interval lies within
  target ± `points` for every one of theirs, refuted where it lies wholly outside for any, else within noise; a
  parity that holds while the 95% interval excludes the target says so (`differs`).
- `by construction` (a reading implies it), `cut off by the run length`, `not measured` (a NaN side): no test.
A sequential look passes its own nominal level (`alpha`, report/sequential.py). Power lines come from Welch's own
sampling at the deciding test's seeds (welch_power)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np


MIN_SEEDS = 3                 # a claim is tested only from this many seeds a side
ALPHA = 0.05                  # two-sided
POWER = 0.80                  # of the smallest difference an undecided claim's test detects
HOLDS, REFUTED, WITHIN_NOISE = "holds", "refuted", "within noise"
BY_CONSTRUCTION, CUT_OFF, NOT_MEASURED = "by construction", "cut off by the run length", "not measured"
UNTESTED = "untested"         # written "untested (n=k)"
TESTED = (HOLDS, REFUTED, WITHIN_NOISE)
BELOW_MARGIN, ABOVE_MARGIN, CONSISTENT_MARGIN = ("below the paper's margin", "above the paper's margin",
                                                 "consistent with the paper's margin")
MARGIN_DECIDED = (BELOW_MARGIN, ABOVE_MARGIN)


@dataclass(frozen=True)
class Side:
    """One cell of a comparison: its mean over seeds, sample std (ddof = 1; NaN with one seed), seeds,
    `name`, the cell as a reader finds it (e.g. "fedsem accuracy"), and `paper`, the value the paper
    printed for the cell (NaN where it printed none); `run_ids`, the runs the cell was computed from, which
    a claim row names as its own."""
    name: str
    mean: float
    std: float
    n: int
    paper: float = math.nan
    run_ids: tuple[str, ...] = ()

    def scaled(self, factor: float, name: str | None = None) -> "Side":
        """factor · the cell (a claim on a ratio, e.g. "half the bytes": ours − 0.5 · theirs)."""
        return Side(name or f"{factor:g} × {self.name}", factor * self.mean, abs(factor) * self.std, self.n,
                    factor * self.paper, self.run_ids)


@dataclass(frozen=True)
class Interval:
    """The Welch interval of ours − one of theirs (`against`) at `confidence`, from the difference, its
    standard error and Welch–Satterthwaite degrees of freedom; `n`: the two sides' seeds (ours, theirs)."""
    against: str
    difference: float
    se: float
    df: float
    confidence: float = 1 - ALPHA
    n: tuple[int, int] = (0, 0)
    sds: tuple[float, float] = (math.nan, math.nan)

    @property
    def half_width(self) -> float:
        return 0.0 if self.se == 0.0 else t_quantile(self.df, 1 - (1 - self.confidence) / 2) * self.se

    @property
    def low(self) -> float:
        return self.difference - self.half_width

    @property
    def high(self) -> float:
        return self.difference + self.half_width

    def at(self, confidence: float) -> "Interval":
        return replace(self, confidence=confidence)

    @property
    def detectable(self) -> float:
        """The smallest true difference (from the claim's target) this Welch test finds with POWER, two-sided
        at 1 − confidence, at its own seeds with the measured spreads taken as true (welch_power)."""
        if self.se == 0.0:
            return 0.0
        return exact_detectable(self.sds, self.n, 1 - self.confidence)

    def p(self, target: float, upper: float | None = None) -> float:
        """Two-sided p of "ours − theirs differs from `target`" (one side's p doubled, the side of the
        difference); with `upper`, TOST's p of "lies within [target, upper]" (the larger one-sided p: the
        90% interval inside the band is p < 0.05)."""
        se = self.se
        if se == 0.0:
            inside = self.difference > target if upper is None else target <= self.difference <= upper
            return 0.0 if inside else 1.0
        if upper is None:
            return float(min(1.0, 2 * _student_t().sf(abs(self.difference - target) / se, self.df)))
        student_t = _student_t()
        return float(max(student_t.sf((self.difference - target) / se, self.df),
                         student_t.sf((upper - self.difference) / se, self.df)))

    def __str__(self) -> str:
        df = "∞" if math.isinf(self.df) else f"{self.df:.1f}"
        level = "" if abs(self.confidence - (1 - ALPHA)) < 1e-12 else f"{100 * self.confidence:.4g}% "
        return f"{level}[{self.low:.2f}, {self.high:.2f}] vs {self.against} (df {df})"


@dataclass(frozen=True)
class Verdict:
    """What claim_test decided (`word`); for a tested claim, the interval that decided it, the interval
    against the best of theirs by mean where that is another (`best_by_mean`), and `p`: the claim's
    p-value, the largest over its intervals (every one must clear; Holm adjusts it over a family).
    `margin`: the verdict against the paper's margin (ordering claims whose paper printed every cell; None
    otherwise) with its deciding `margin_interval` and the paper's margin `paper_margin` for it; `differs`:
    for a parity that holds, the 95% interval that excludes the target, if one does."""
    word: str
    interval: Interval | None = None
    best_by_mean: Interval | None = None
    p: float | None = None
    margin: str | None = None
    margin_interval: Interval | None = None
    paper_margin: float | None = None
    differs: Interval | None = None

    def __str__(self) -> str:
        return self.word

    @property
    def tested(self) -> bool:
        return self.word in TESTED

    @property
    def decided(self) -> bool:
        """Decided either way: the direction (holds, refuted) or the paper's margin (below, above)."""
        return self.word in (HOLDS, REFUTED) or self.margin in MARGIN_DECIDED

    @property
    def detectable(self) -> float | None:
        """The smallest difference the deciding test detects with POWER (80%) at its n and spread."""
        return None if self.interval is None else self.interval.detectable

    def power_line(self, fewest: int | None = None, unit: str = "points") -> str:
        """What an undecided verdict can say, at the deciding test's own seeds: "undecided at n = 3 vs 5
        (detects ≥ 4.1 points)", in the claim's unit (`fewest` is used only where the interval has no seeds)."""
        if self.word != WITHIN_NOISE or self.detectable is None or self.decided:
            return ""
        a, b = self.interval.n
        seeds = f"{a}" if a == b else f"{a} vs {b}"
        if a == 0:
            seeds = f"{fewest}"
        return f"undecided at n = {seeds} (detects ≥ {self.detectable:.2f} {unit or 'points'})"

    def margin_line(self, unit: str = "points") -> str:
        """The paper's margin verdict with its interval: "below the paper's margin (0.73; [-0.37, 0.29] vs ...)"."""
        if self.margin is None:
            return ""
        return f"{self.margin} ({self.paper_margin:+.2f} {unit or 'points'}; {self.margin_interval})"


@dataclass(frozen=True)
class Comparison:
    """A claim as the cells it compares: `ours` against each of `theirs` (see the module's rules).
    `by_construction` names the reading that implies the claim; `cut_off` says what the run's length
    cuts off; `unit`: what the published difference (ours − theirs, or a saving) is counted in; `alpha`: the
    two-sided level it is tested at (a stopping rule's look sets its nominal level, and says so in `look`)."""
    ours: Side
    theirs: tuple[Side, ...]
    kind: str = "above"
    target: float = 0.0
    points: float | None = None
    by_construction: str | None = None
    cut_off: str | None = None
    unit: str = "points"
    alpha: float = ALPHA
    look: str = ""

    def verdict(self, parity_points: float, alpha: float | None = None) -> Verdict:
        return claim_test(self.ours, self.theirs, kind=self.kind, target=self.target,
                          points=parity_points if self.points is None else self.points,
                          by_construction=self.by_construction is not None, cut_off=self.cut_off is not None,
                          alpha=self.alpha if alpha is None else alpha)


def row_side(row, name: str) -> Side:
    """A results row (a cell) as a claim's side: its mean, std, seeds, printed value and runs."""
    std, n = _number(_field(row, "reproduced_std")), _number(_field(row, "n_runs"))
    return Side(name, float(row.reproduced_value), std, 0 if math.isnan(n) else int(n), printed(row),
                tuple(str(_field(row, "run_ids") or "").split()))


def claim_run_ids(comparison: Comparison) -> str:
    """The runs behind every cell a claim compares, as a claim row's `run_ids` (each once, in order)."""
    sides = (comparison.ours, *comparison.theirs)
    return " ".join(dict.fromkeys(run_id for side in sides for run_id in side.run_ids))


def _field(row, name: str):
    return row.get(name) if hasattr(row, "get") else getattr(row, name, None)


def _number(value) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def printed(row) -> float:
    """A results row's paper value as a Side's `paper`: NaN where the paper printed none (None, NaN or absent)."""
    value = _field(row, "paper_value")
    return math.nan if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _student_t():
    """scipy's Student t, imported where a test is computed: a plan (`reproduce --dry-run`) reads this module's
    verdict names through report.tables, and scipy.stats takes over half a second to import."""
    from scipy.stats import t       # off a plan's path: the docstring's reason
    return t


def t_quantile(df: float, p: float = 1 - ALPHA / 2) -> float:
    """Student's t quantile at `df` degrees of freedom (df = ∞: the normal's)."""
    if df <= 0 or math.isnan(df):
        raise ValueError(f"t_quantile df={df}: must be > 0")
    return float(_student_t().ppf(p, df))


def welch_power(delta: float, sds: tuple[float, float], n: tuple[int, int], alpha: float = ALPHA,
                grid: int = 160) -> float:
    """Power of Welch's two-sided test at level `alpha` when the true difference is `delta`, the sides' true
    spreads `sds` and seeds `n`: the mean difference d ~ N(δ, σ₁²/n₁ + σ₂²/n₂) is independent of the two sample
    variances (each σ²·χ²/(n − 1)), and the test rejects where |d| > t(ν̂)·ŝe with ν̂, ŝe from those variances.
    So the power is the mean over the variances of Φ((δ − c)/σ_d) + Φ((−δ − c)/σ_d), c = t(ν̂)·ŝe, computed on
    a grid of `grid` χ² quantiles a side (midpoints; tests/test_claim_test.py checks it against a Monte Carlo).
    Unlike (t_α + t_β)·se, which holds se and ν fixed, this counts their sampling too."""
    from scipy.stats import chi2, norm      # scipy where a test is computed, as _student_t's
    (s1, s2), (n1, n2) = sds, n
    sigma_d = math.sqrt(s1 ** 2 / n1 + s2 ** 2 / n2)
    probs = (np.arange(grid) + 0.5) / grid
    v1 = s1 ** 2 * chi2.ppf(probs, n1 - 1)[:, None] / (n1 - 1) / n1      # each mean's estimated variance
    v2 = s2 ** 2 * chi2.ppf(probs, n2 - 1)[None, :] / (n2 - 1) / n2
    se = np.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 ** 2 / (n1 - 1) + v2 ** 2 / (n2 - 1))
    critical = _student_t().ppf(1 - alpha / 2, df) * se
    return float(np.mean(norm.cdf((delta - critical) / sigma_d) + norm.cdf((-delta - critical) / sigma_d)))


def exact_detectable(sds: tuple[float, float], n: tuple[int, int], alpha: float = ALPHA, power: float = POWER) -> float:
    """The δ at which welch_power reaches `power` (brentq between 0 and a bracket that surely passes it)."""
    from scipy.optimize import brentq     # scipy where a test is computed, as _student_t's
    sigma_d = math.sqrt(sds[0] ** 2 / n[0] + sds[1] ** 2 / n[1])
    high = sigma_d * 40
    return float(brentq(lambda delta: welch_power(delta, sds, n, alpha) - power, 0.0, high, xtol=1e-6 * sigma_d))


def welch(ours: Side, theirs: Side, confidence: float = 1 - ALPHA) -> Interval:
    """The interval of ours − theirs at `confidence` by Welch's t at its Welch–Satterthwaite degrees of freedom."""
    for side in (ours, theirs):
        if side.n < 2 or math.isnan(side.std):
            raise ValueError(f"welch: side {side.name!r} has n={side.n}, std={side.std}: needs n ≥ 2 and a std")
    va, vb = ours.std ** 2 / ours.n, theirs.std ** 2 / theirs.n        # each mean's variance
    se = math.sqrt(va + vb)
    d = ours.mean - theirs.mean
    if se == 0.0:
        return Interval(theirs.name, d, 0.0, math.inf, confidence, (ours.n, theirs.n), (0.0, 0.0))
    df = (va + vb) ** 2 / (va ** 2 / (ours.n - 1) + vb ** 2 / (theirs.n - 1))
    return Interval(theirs.name, d, se, df, confidence, (ours.n, theirs.n), (ours.std, theirs.std))


def claim_test(ours: Side, theirs: Sequence[Side], kind: str = "above", target: float = 0.0, points: float = 1.0,
               by_construction: bool = False, cut_off: bool = False, alpha: float = ALPHA) -> Verdict:
    """The verdict on "ours against each of `theirs`" under the module's rules: `kind` "above" (the
    difference above `target` for every one of theirs) or "parity" (within target ± `points` for
    every one), at two-sided level `alpha` (a sequential look passes its nominal level). Checked in this
    order: not measured, by construction, cut off by the run length, untested (n=k), then Welch's t."""
    if kind not in ("above", "parity"):
        raise ValueError(f"claim_test kind={kind!r}: must be 'above' or 'parity'")
    if not theirs:
        raise ValueError("claim_test theirs=(): a claim compares with at least one cell")
    if not 0 < alpha < 1:
        raise ValueError(f"claim_test alpha={alpha!r}: must be within (0, 1)")
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
    if kind == "parity":
        return _parity(ours, theirs, target, points, alpha)
    k = len(theirs)
    each = [welch(ours, other, 1 - alpha) for other in theirs]              # every one must clear: level α each
    union = [i.at(1 - alpha / k) for i in each]                            # any one below: α/k each
    best = min(each, key=lambda i: i.difference)      # the best of theirs by mean: the one a reader expects
    p = max(i.p(target) if i.difference > target else 1.0 for i in each)
    below = [i for i in union if i.high < target]
    if below:
        decided = min(below, key=lambda i: i.high)
        word = REFUTED
    else:
        decided = min(each, key=lambda i: i.low)          # the one of theirs closest to ours
        word = HOLDS if decided.low > target else WITHIN_NOISE
    margin = _margin(ours, theirs, each, union)
    return Verdict(word, decided, _other(best, decided), p, *margin)


def _margin(ours: Side, theirs: Sequence[Side], each: list[Interval], union: list[Interval]) -> tuple:
    """(word, deciding interval, the paper's margin for it) against the paper's own ours − theirs; empty
    where the paper printed no value for a side."""
    margins = [ours.paper - other.paper for other in theirs]
    if any(math.isnan(m) for m in margins):
        return ()
    below = [(i, m) for i, m in zip(union, margins) if i.high < m]
    if below:
        interval, m = min(below, key=lambda im: im[0].high - im[1])
        return BELOW_MARGIN, interval, m
    interval, m = min(zip(each, margins), key=lambda im: im[0].low - im[1])
    return (ABOVE_MARGIN if interval.low > m else CONSISTENT_MARGIN), interval, m


def _parity(ours: Side, theirs: Sequence[Side], target: float, points: float, alpha: float) -> Verdict:
    """TOST: the (1 − 2α) interval within target ± points for every one of theirs."""
    low, high = target - points, target + points
    each = [welch(ours, other, 1 - 2 * alpha) for other in theirs]
    best = max(each, key=lambda i: abs(i.difference - target))
    p = max(i.p(low, high) for i in each)
    outside = [i for i in each if i.low > high or i.high < low]
    if outside:
        return Verdict(REFUTED, outside[0], _other(best, outside[0]), p)
    widest = max(each, key=lambda i: max(i.high - high, low - i.low))     # the one reaching farthest out
    if not all(low <= i.low and i.high <= high for i in each):
        return Verdict(WITHIN_NOISE, widest, _other(best, widest), p)
    apart = [i.at(1 - alpha) for i in each if not i.at(1 - alpha).low <= target <= i.at(1 - alpha).high]
    return Verdict(HOLDS, widest, _other(best, widest), p, differs=apart[0] if apart else None)


def _other(best: Interval, decided: Interval) -> Interval | None:
    return None if best.against == decided.against else best


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
