"""The stopping rule for FedSiam's undecided claims, fixed in this file before any of its runs (git order is the
evidence: every run of a look beyond a cell's first three seeds comes after the commit that added this file).

Which claims: those undecided both ways when the rule was fixed, with the paper's margin as a verdict of its own
(report/claim_test.py): Table 5's ten "FedSiam-D above every baseline" claims and Tables 7-8 were then decided
(direction or margin), its ten parity claims held (TOST), so the rule covers Table 6's three columns whose
direction is within noise and whose interval holds the paper's margin: Labels-at-Server non-IID γ = 0.01, IID
γ = 0.10 and non-IID γ = 0.10 (MNIST, the paper's protocol; 3 seeds a cell then). Table 6's IID γ = 0.01 was
decided below the paper's margin at n = 3.

The rule: n_max = 10 seeds a side; looks at 5, 7 and 10 seeds of every cell the claim compares (FedSiam-Π,
FedSiam-MT, FedFixMatch, FedMatch); a look tests the claim with claim_test at the nominal level that
Lan-DeMets' O'Brien-Fleming-type spending allots it (two-sided α = 0.05 over the information fractions 0.5,
0.7, 1.0: report/sequential.py), direction and margin both; the claim stops at the first look where it is
decided either way, else at n_max undecided. The looks at n = 3 the fixed-n tests made before this rule are not
in its spending (their data are the first three seeds of look 5); the rule is stated for the looks it makes.

Cost, fixed before the runs: a Table 6 MNIST run took 4.5-13 min on one core of this CPU (results'
`seconds`), so a look of 12 cells × 2 seeds is about 2 h on 2 workers, and the whole rule at most 84 runs (about
6.5 h); tests/test_sequential.py prints the expected runs against a fixed n = 10.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ...profiles import PROFILES
from .cells import table6_cells

N_MAX = 10
LOOKS = (5, 7, 10)
SPENDING = "obrien_fleming"
ALPHA = 0.05
SEEDS = tuple(range(1234, 1234 + N_MAX))        # the paper's 1234 first, then the next ones, as cells.SEEDS


@dataclass(frozen=True)
class SequentialClaim:
    """A claim under the rule: the claims table's row (table, setting, labeled, dataset, metric) and the notebook
    table whose cells it compares."""
    table: str
    setting: str
    labeled: str
    dataset: str
    metric: str
    cells_table: str
    methods: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.table} {self.setting} γ={self.labeled} {self.dataset}"


_TABLE6 = ("fedfixmatch", "fedmatch", "fedsiam_pi", "fedsiam_mt")
CLAIMS = tuple(SequentialClaim("table6_claims", setting, labeled, "mnist", "siamese_minus_fixmatch_based", "table6",
                               _TABLE6)
               for setting, labeled in (("server_noniid", "0.01"), ("server_iid", "0.10"), ("server_noniid", "0.10")))


@functools.lru_cache(maxsize=None)
def _levels() -> tuple[float, ...]:
    from ...report.sequential import nominal_levels    # scipy, here: claims.py (on a plan's path) reads this module
    return tuple(nominal_levels(LOOKS, ALPHA, SPENDING))


def levels() -> list[float]:
    """The nominal two-sided level of each look (LOOKS), computed once."""
    return list(_levels())


def cells(claim: SequentialClaim, n: int, device: str = "cpu") -> list:
    """The cells the claim compares at `n` seeds each (the first n of SEEDS), at the paper's protocol (always: the
    rule is the paper protocol's, whatever $FSSL_PROFILE a notebook session sets)."""
    if claim.cells_table != "table6":
        raise ValueError(f"SequentialClaim.cells_table={claim.cells_table!r}: the rule covers 'table6' only")
    return table6_cells(PROFILES["paper"], device, methods=claim.methods, settings=[claim.setting],
                        datasets=[claim.dataset], labeled_ratios=[float(claim.labeled)], seeds=list(SEEDS[:n]))


def boundary_z(level: float) -> float:
    """The two-sided z boundary of a nominal level."""
    from scipy.stats import norm      # as _levels's
    return float(norm.isf(level / 2))


def claim_level(key: tuple, profile: str, n: int) -> tuple[float, str] | None:
    """A claim row under the rule (`key`: table, setting, labeled, dataset, metric) at `n` seeds (the fewest side):
    (its look's nominal level, "look k of 3 at n = …"); None for rows the rule does not cover, or seeds at no look
    (the fixed-n test at 5% then speaks, as it did before the rule)."""
    covered = {(c.table, c.setting, c.labeled, c.dataset, c.metric) for c in CLAIMS}
    if tuple(key) not in covered or profile != "paper":
        return None
    if n < LOOKS[0]:
        return ALPHA, (f"under the stopping rule, before its first look (n = {LOOKS[0]}): the fixed-n test at "
                       f"{ALPHA:g} made before the rule; `reproduce --until-decided` trains the looks")
    if n not in LOOKS:
        return None
    k = LOOKS.index(n)
    level = levels()[k]
    return level, (f"look {k + 1} of {len(LOOKS)} at n = {n}: nominal level {level:.4f} (|z| ≥ {boundary_z(level):.3f}, "
                   f"O'Brien-Fleming-type spending)")
