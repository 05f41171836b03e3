"""Where each claim under FedSiam's stopping rule (stopping.py) stands, read from the run store only: the looks made
(their nominal level and verdict), whether the claim stopped, and the runs its next look needs. Nothing here trains;
`reproduce --until-decided` (job/until_decided.py) trains what `standing` says is missing."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ...profiles import PROFILES
from ...report.tables import COLUMNS, PARITY_POINTS, measured_row
from ...store import RunStore
from .cells import PAPER
from .claims import CLAIM_SOURCES
from .stopping import LOOKS, SequentialClaim, boundary_z, cells, levels


@dataclass(frozen=True)
class Look:
    """Where a claim stands under the rule: the looks made (seeds a side, nominal level, verdict at it), whether
    it stopped (decided, or undecided at n_max), and the runs the next look needs (empty once stopped)."""
    claim: SequentialClaim
    made: tuple[tuple[int, float, object], ...]
    stopped: bool
    missing: tuple = ()

    @property
    def last(self):
        return self.made[-1] if self.made else None

    def line(self) -> str:
        if not self.made:
            return f"{self.claim.key}: no look yet; look 1 at n = {LOOKS[0]} needs {len(self.missing)} runs"
        n, level, verdict = self.last
        k = len(self.made)
        said = f"{verdict.word}" + (f", {verdict.margin}" if verdict.margin else "")
        state = ("decided" if verdict.decided else "undecided at n_max") if self.stopped else \
            f"continues: look {k + 1} at n = {LOOKS[k]} needs {len(self.missing)} runs"
        return (f"{self.claim.key}: look {k} of {len(LOOKS)} at n = {n} (nominal two-sided level {level:.4f}, "
                f"boundary |z| ≥ {boundary_z(level):.3f}): {said}; {state}")


def standing(claim: SequentialClaim, store=None, device: str = "cpu") -> Look:
    """Where `claim` stands, from the finished runs in `store` only (nothing trains): each look whose runs all
    exist is tested in order until one decides."""
    store = store or RunStore()
    made = []
    for n, level in zip(LOOKS, levels()):
        look_cells = cells(claim, n, device)
        results = {cfg.run_id: store.load(cfg) for cell in look_cells for cfg in cell.configs}
        missing = tuple(cfg for cell in look_cells for cfg in cell.configs if results[cfg.run_id] is None)
        if missing:
            return Look(claim, tuple(made), False, tuple({c.run_id: c for c in missing}.values()))
        verdict = _verdict(claim, look_cells, results, level)
        made.append((n, level, verdict))
        if verdict.decided:
            return Look(claim, tuple(made), True)
    return Look(claim, tuple(made), True)


def _verdict(claim: SequentialClaim, look_cells: list, results: dict, level: float):
    """claim_test at `level` on the look's cells, their rows built as reproduce_cells builds the published ones."""
    paper = PROFILES["paper"]
    rows = [measured_row(cell, [results[cfg.run_id] for cfg in cell.configs], paper, "cpu") for cell in look_cells]
    _, build = CLAIM_SOURCES[(PAPER, claim.table)]
    for row, comparison in build(pd.DataFrame(rows, columns=COLUMNS)):
        if row["metric"] == claim.metric:
            return comparison.verdict(PARITY_POINTS, alpha=level)      # the builder's look is this one's
    raise ValueError(f"{claim.key}: its cells state no {claim.metric!r} claim")
