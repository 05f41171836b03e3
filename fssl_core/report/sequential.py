"""A group-sequential stopping rule for claims: seeds added look by look, each look tested at a nominal level
that an α-spending function allots, so that the chance of a wrong decision over all looks stays at α.

Lan & DeMets (1983, Biometrika 70:659) spend α over the information fraction t = n / n_max (seeds a side):
- O'Brien-Fleming type: α(t) = 2 − 2 Φ(z_{1−α/2} / √t), little early, most at the last look;
- Pocock type: α(t) = α ln(1 + (e − 1) t), evenly.
The boundary c_k of look k solves P(|Z_1| < c_1, …, |Z_{k−1}| < c_{k−1}, |Z_k| ≥ c_k) = α(t_k) − α(t_{k−1})
for the standardised statistics of growing samples, jointly normal with corr(Z_i, Z_j) = √(t_i / t_j) (i ≤ j;
Jennison & Turnbull 2000, §7.2). With three equally spaced looks the O'Brien-Fleming type gives 3.471, 2.454,
2.004 (gsDesign's sfLDOF; tests/test_sequential.py). A look then tests its claim with claim_test at the
nominal two-sided level 2(1 − Φ(c_k)), on Welch's t. No well-kept Python library computes these (gsDesign and
rpact are R); scipy's multivariate normal does the integral.

The nominal levels come from the normal; with 3-10 seeds a side the claims use Welch's t at them, and
`simulate` measures what that does to the error rate at a claim's own spreads and seeds (the tests show it
stays at or under α)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.stats import multivariate_normal, norm

SPENDING = ("obrien_fleming", "pocock")


def spent(t: float, alpha: float, spending: str) -> float:
    """α spent up to information fraction `t` (0 < t ≤ 1)."""
    if spending == "obrien_fleming":
        return float(2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(t)))
    if spending == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"spending={spending!r}: must be one of {', '.join(SPENDING)}")


def _inside(bounds: Sequence[float], fractions: Sequence[float]) -> float:
    """P(|Z_i| < c_i for every look i) for the looks' joint normal (corr √(t_i/t_j))."""
    k = len(bounds)
    t = np.asarray(fractions, float)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    c = np.asarray(bounds, float)
    if k == 1:
        return float(norm.cdf(c[0]) - norm.cdf(-c[0]))
    return float(multivariate_normal(mean=np.zeros(k), cov=cov, seed=12345, maxpts=200000 * k, abseps=1e-7,
                                     releps=1e-7).cdf(c, lower_limit=-c))


def boundaries(fractions: Sequence[float], alpha: float = 0.05, spending: str = "obrien_fleming") -> list[float]:
    """The two-sided z boundary of each look at the information `fractions` (increasing, the last 1)."""
    if not fractions or any(b <= a for a, b in zip(fractions, fractions[1:])) or not 0 < fractions[0] \
            or abs(fractions[-1] - 1) > 1e-12:
        raise ValueError(f"fractions={list(fractions)}: must increase from above 0 to 1")
    bounds: list[float] = []
    before = 1.0                         # P(no stop at the looks so far)
    for k, t in enumerate(fractions):
        target = spent(t, alpha, spending) - (spent(fractions[k - 1], alpha, spending) if k else 0.0)
        # stop here with probability `target`: P(inside so far) − P(inside so far and at this look) = target
        bound = brentq(lambda c: before - _inside([*bounds, c], fractions[:k + 1]) - target, 0.5, 12.0, xtol=1e-6)
        bounds.append(float(bound))
        before = _inside(bounds, fractions[:k + 1])
    return bounds


def nominal_levels(looks: Sequence[int], alpha: float = 0.05, spending: str = "obrien_fleming") -> list[float]:
    """The two-sided nominal level of each look, at seeds `looks` a side (the last n_max)."""
    fractions = [n / looks[-1] for n in looks]
    return [float(2 * norm.sf(c)) for c in boundaries(fractions, alpha, spending)]


@dataclass(frozen=True)
class Simulated:
    """What `simulate` found over its draws: the share with a wrong decision, and the mean seeds a side spent."""
    error: float
    mean_seeds: float
    draws: int


def simulate(decide: Callable[[list[np.ndarray], float], bool], means: Sequence[float], sds: Sequence[float],
             looks: Sequence[int], levels: Sequence[float], draws: int = 2000, seed: int = 0) -> Simulated:
    """The stopping rule on simulated seeds: each side's values N(mean, sd); at each look the first n values a
    side go to `decide(sides, level)`, which says whether the claim is decided at that nominal level; the rule
    stops at the first look that decides. With `means` under a null, `error` is the rule's type-I error."""
    rng = np.random.default_rng(seed)
    wrong, seeds = 0, 0
    for _ in range(draws):
        values = [rng.normal(m, s, looks[-1]) for m, s in zip(means, sds)]
        for n, level in zip(looks, levels):
            if decide([v[:n] for v in values], level):
                wrong += 1
                break
        seeds += n
    return Simulated(wrong / draws, seeds / draws, draws)
