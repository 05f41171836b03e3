"""`reproduce --until-decided`: train, look by look, only the runs the stopping rule's next look needs
(papers/fedsiam/stopping.py), and stop each claim at its boundary. Resumes: the runs in the store are the state."""
from __future__ import annotations

import sys

from .. import executors
from ..papers.fedsiam.looks import standing
from ..papers.fedsiam.stopping import CLAIMS
from ..store import RunStore


def until_decided(dry_run: bool = False, device: str = "cpu", store=None) -> list:
    """Loop: say where each claim stands; train the runs of every unstopped claim's next look (all claims' runs
    in one executor call, so they share the workers); until every claim has stopped. `dry_run`: say it once and
    train nothing. Returns the final standings."""
    store = store or RunStore()
    while True:
        looks = [standing(claim, store, device) for claim in CLAIMS]
        for look in looks:
            print(f"[until-decided] {look.line()}", file=sys.stderr, flush=True)
        pending = list({c.run_id: c for look in looks if not look.stopped for c in look.missing}.values())
        if dry_run or not pending:
            if not pending:
                print("[until-decided] every claim under the rule has stopped", file=sys.stderr, flush=True)
            return looks
        print(f"[until-decided] training {len(pending)} runs for the next looks", file=sys.stderr, flush=True)
        executors.run_all(pending, store=store)
