"""Verify the published numbers from the committed records, and say what they answer.

`verify` (python -m fssl_core verify) proves every record in the run store (each run's files against their
digests, store/integrity.py), checks that every run a published row names proves itself, retrains a random
sample of the runs the paper-protocol rows name (the sample's size and seed printed; each into a throw-away
store) and compares each with its record: every metric of every round equal to the bit (the round's wall time
aside). It then prints each paper's claims in plain words from the published claim rows. A mismatch or an
unproven run fails it with one line naming the run. Nothing is published or written into the store.

Bit for bit holds on the machine a record was trained on: CPU kernels differ between instruction sets
(perf/fingerprint.py), and records of one VM image (env.json's `platform`) measured on another differed from round 1
(measurements/2026-11-29-verify-platforms). So a record trained on another machine (its platform, and its CPU where
env.json names one) that differs here is said as such, with its final accuracy both ways, and is no failure: only a
record of this machine can fail the job. A run on a device absent here (a GPU's records, on a CPU) is not drawn."""
from __future__ import annotations

import platform
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..engine.trainer import train
from ..papers import claim_comparisons
from ..paths import results_dir
from ..report.claim_words import claims_in_words
from ..report.publish import unproven_published_runs
from ..report.tables import claim_verdicts, published_results
from ..store import RunStore
from ..store.run_store import this_cpu
from ..store.files import read_json

TIMING = frozenset({"seconds"})        # a round's wall time: the one field a retrain may not repeat


@dataclass
class Verification:
    proven: int = 0
    unproven: dict[str, list[str]] = field(default_factory=dict)
    sample: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    other_machine: list[str] = field(default_factory=list)    # differ, trained on another platform: no failure
    words: str = ""

    @property
    def ok(self) -> bool:
        return not self.unproven and not self.mismatches


def paper_protocol_runs(folder: Path) -> list[str]:
    """The run ids the published paper-protocol rows of `folder` name, each once, in order (logs of the authors'
    code, named with a slash, are no runs of ours)."""
    frame = published_results(folder)
    rows = frame[(frame.profile == "paper") & ~frame.table.str.endswith("_claims")]
    return list(dict.fromkeys(i for ids in rows.run_ids.fillna("") for i in str(ids).split() if "/" not in i))


def same_rows(stored: list[dict], again: list[dict]) -> str | None:
    """None where every round's metrics are equal but their timing; else the first difference, in words."""
    if len(stored) != len(again):
        return f"{len(again)} rounds retrained, {len(stored)} recorded"
    for a, b in zip(stored, again):
        keys = (set(a) | set(b)) - TIMING
        differ = sorted(k for k in keys if a.get(k) != b.get(k))
        if differ:
            k = differ[0]
            return f"round {a.get('round')}: {k} = {b.get(k)!r} retrained, {a.get(k)!r} recorded"
    return None


MACHINE = ("platform", "cpu")     # what env.json says of where a run was trained (older records: the platform)


def trained_machine(summary: dict) -> dict[str, str]:
    """Where a finished run was trained, as its env.json says: the platform, and the CPU where it names one."""
    env = read_json(Path(summary["run_dir"]) / "env.json")
    return {k: str(env[k]) for k in MACHINE if k in env}


def this_machine(keys) -> dict[str, str]:
    """This machine in the terms of `keys` (a record's `trained_machine`), so that an older record, which names only
    its platform, is compared by its platform."""
    here = {"platform": platform.platform(), "cpu": this_cpu()}
    return {k: here[k] for k in keys}


def budgeted(order: list[str], recorded: dict[str, float], seconds: float) -> list[str]:
    """The runs of `order` (a random order) to retrain in `seconds`: each in turn where its recorded training time
    fits in what is left, skipped where it does not (a long run does not end the draw for the shorter ones after)."""
    chosen, left = [], seconds
    for run_id in order:
        if recorded[run_id] <= left:
            chosen.append(run_id)
            left -= recorded[run_id]
    return chosen


def verify(sample: int | None = 1, seed: int = 0, store: RunStore | None = None, folder: Path | None = None,
           say=print, minutes: float | None = None, clock=time.monotonic) -> Verification:
    """Prove, retrain runs drawn with `seed` from the paper-protocol rows' runs, compare, and answer: `sample`
    runs, or with `minutes` as many as their recorded training times fit in that budget (the estimate printed,
    and revised by the pace of the retrains so far: a run whose revised time no longer fits is not started)."""
    store = store or RunStore()
    folder = Path(folder) if folder is not None else results_dir("quick")
    out = Verification()
    finished = {r.config.run_id: r for r in store.finished()}
    out.proven = len(finished)
    out.unproven = unproven_published_runs(folder, store)
    say(f"[verify] {out.proven} runs in {store.root} prove themselves; published rows name "
        + ("no run that does not" if not out.unproven else f"unproven runs: {out.unproven}"))
    named = [i for i in paper_protocol_runs(folder) if i in finished]
    cuda = torch.cuda.is_available()
    candidates = [i for i in named if finished[i].config.device == "cpu" or cuda]
    if len(candidates) < len(named):
        say(f"[verify] {len(named) - len(candidates)} of the runs named were trained on a GPU, absent here: not drawn")
    recorded_seconds = {i: float(finished[i].summary.get("seconds") or 0.0) for i in candidates}
    if minutes is not None:
        order = random.Random(seed).sample(candidates, len(candidates))
        out.sample = budgeted(order, recorded_seconds, minutes * 60)
        how = f"--minutes {minutes:g}, --seed {seed}; recorded training {sum(recorded_seconds[i] for i in out.sample) / 60:.1f} min"
    else:
        out.sample = random.Random(seed).sample(candidates, min(sample, len(candidates)))
        how = f"--sample {sample}, --seed {seed}"
    say(f"[verify] retraining {len(out.sample)} of the {len(candidates)} paper-protocol runs the published rows "
        f"name ({how}): {' '.join(out.sample) or 'none'}")
    start, spent_recorded, done, skipped, pace = clock(), 0.0, [], [], 1.0
    for run_id in out.sample:
        recorded = finished[run_id]
        if minutes is not None and done:
            pace = (clock() - start) / max(spent_recorded, 1e-9)       # this machine's seconds per recorded second
            if clock() - start + pace * recorded_seconds[run_id] > minutes * 60:
                skipped.append(run_id)         # a shorter one drawn after it may still fit
                continue
        with tempfile.TemporaryDirectory(prefix="fssl-verify-") as scratch:
            again = train(recorded.config, RunStore(scratch), progress=False)
        done.append(run_id)
        spent_recorded += recorded_seconds[run_id]
        problem = same_rows(recorded.metrics, again.metrics)
        line = f"run {run_id} ({recorded.config.algorithm} {recorded.config.dataset} seed {recorded.config.seed})"
        trained_on = trained_machine(recorded.summary)
        here = this_machine(trained_on)
        if problem and trained_on != here:
            problem = (f"trained on another machine ({' | '.join(trained_on.values()) or 'not recorded'}; here "
                       f"{' | '.join(here.values())}), not equal bit for bit here "
                       f"({problem}); final accuracy {again.accuracy} retrained, {recorded.accuracy} recorded")
            out.other_machine.append(f"{line}: {problem}")
        elif problem:
            out.mismatches.append(f"{line}: {problem}")
        say(f"[verify] {line}: " + (problem or "every metric of its "
                                    f"{len(again.metrics)} rounds equal to its record"))
    out.sample = done
    if skipped:
        say(f"[verify] the budget's {minutes:g} min would be exceeded at this machine's pace ({pace:.2f}× the recorded "
            f"times): {len(skipped)} drawn run(s) not retrained: {' '.join(skipped)}")
    if out.other_machine:
        say(f"[verify] {len(done) - len(out.other_machine) - len(out.mismatches)} of {len(done)} retrained runs equal "
            f"their records bit for bit; {len(out.other_machine)} trained on another machine differ in their floats "
            "here (kernels differ between CPUs), which is no failure")
    out.words = claims_in_words(claim_verdicts(published_results(folder), claim_comparisons()))
    say("[verify] what the published claims say:\n" + (out.words or "no tested claim"))
    return out
