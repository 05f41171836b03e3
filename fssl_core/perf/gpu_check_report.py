"""The GPU check's report and its steps' clocks (perf/gpu_check.py runs the steps; perf/gpu_check_runs.py holds the
steps that train runs): the report, rewritten whole after every change, and each step's share of the budget."""
from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

GRACE_S = 30.0      # how long the whole check may run past its budget before the watchdog stops it


# --- the report and the steps' clocks --------------------------------------------------------------
class Check:
    """The whole check: its report (rewritten after every change), its clock, the processes it started."""

    def __init__(self, out: Path, header: dict):
        self.out, self.report = out, {**header, "finished": False, "steps": {}}
        self.lock = threading.RLock()
        self.children: set = set()
        self.current: Step | None = None
        self.start = time.perf_counter()
        out.mkdir(parents=True, exist_ok=True)

    def write(self) -> None:
        with self.lock:
            for name, text in (("gpu_check.json", json.dumps(self.report, indent=2, default=str)),
                               ("gpu_check.md", markdown(self.report))):
                tmp = self.out / f".{name}.tmp"
                tmp.write_text(text)
                os.replace(tmp, self.out / name)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def overrun(self) -> None:
        """The watchdog: the check ran GRACE_S past its budget."""
        with self.lock:
            if self.current is not None:
                self.current.cut(f"the whole check ran {GRACE_S:g} s past its budget: stopped by the watchdog")
                self.current.section["status"] = "cut"
                self.current.section["elapsed_s"] = round(time.perf_counter() - self.current.began, 1)
            self.report["stopped"] = f"watchdog at {self.elapsed():.0f} s"
            self.write()
        for process in list(self.children):
            process.kill()
            process.join(timeout=5)
        print(f"[gpu-check] stopped by the watchdog at {self.elapsed():.0f} s; report in {self.out}", flush=True)
        os._exit(3)


class Step:
    """One step's clock and section of the report."""

    def __init__(self, check: Check, name: str, deadline: float, share_s: float):
        self.check, self.name, self.deadline = check, name, deadline
        self.began = time.perf_counter()
        self.section = {"status": "running", "share_s": round(share_s, 1), "budget_s": round(deadline - self.began, 1),
                        "elapsed_s": 0.0, "cut": False, "note": "", "data": {}, "rows": []}
        check.report["steps"][name] = self.section
        check.current = self
        check.write()

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def affords(self, longest: float) -> bool:
        """Whether a unit of work as long as the longest so far (any, for the first) fits in the time left."""
        return self.left() > max(longest, 0.0)

    def set(self, **data: Any) -> None:
        with self.check.lock:
            self.section["data"].update(data)
            self.check.write()

    def record(self, row: dict) -> None:
        with self.check.lock:
            self.section["rows"].append(row)
            self.check.write()

    def cut(self, reason: str) -> None:
        with self.check.lock:
            self.section["cut"] = True
            self.section["note"] = "; ".join(filter(None, [self.section["note"], reason]))
            self.check.write()

    def progress(self, i: int, n: int, what: str) -> None:
        print(f"[gpu-check {self.check.elapsed():.0f}/{self.check.report['budget_s']:.0f} s] {self.name} {i}/{n} "
              f"{what} (step {time.perf_counter() - self.began:.0f}/{self.section['budget_s']:.0f} s)", flush=True)

    def spawn(self, target: Callable, *args: Any):
        """A spawned process of this step (a fresh interpreter, as a run in the executors), killed at its deadline."""
        process = multiprocessing.get_context("spawn").Process(target=target, args=args, daemon=True)
        process.start()
        self.check.children.add(process)
        return process

    def reap(self, process, kill: bool = False) -> None:
        if kill and process.is_alive():
            process.kill()
        process.join(timeout=30)
        self.check.children.discard(process)

    def wait_for(self, done: Callable[[], bool], poll: float = 0.02) -> bool:
        while not done():
            if self.left() <= 0:
                return False
            time.sleep(poll)
        return True


# --- the steps ---------------------------------------------------------------------------------------

# --- the markdown report -----------------------------------------------------------------------------
def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    return "-" if value is None or value == "" else str(value).replace("|", "/")


def _table(rows: list[dict]) -> list[str]:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows])


def markdown(report: dict) -> str:
    # bench (torchvision, pandas), kept out of gpu_check_runs' spawned runs, which import this module and whose
    # start-up is measured
    from .bench import markdown as bench_markdown
    state = "finished" if report["finished"] else report.get("stopped", "in progress or stopped")
    lines = [f"# GPU check: {report['device']}, size {report['size']}", "",
             f"`{report['command']}`: {state}; budget {report['budget_s']:g} s in all, split by share "
             f"({', '.join(f'{k} {v:g} s' for k, v in report['shares'].items())}), what a step leaves unspent passing "
             "to the next.", "",
             *_table([{"step": name, "status": s["status"], "share s": s["share_s"], "budget s (with time left over)":
                       s["budget_s"], "elapsed s": s["elapsed_s"], "note": s["note"]}
                      for name, s in report["steps"].items()])]
    for name, s in report["steps"].items():
        lines += ["", f"## {name}", ""]
        if s["data"]:
            lines += _table([{"field": k, "value": v} for k, v in s["data"].items()]) + [""]
        if s["rows"]:
            lines += [bench_markdown(s["rows"])] if name == "bench" else _table(s["rows"])
        if s.get("error"):
            lines += ["", "```", s["error"].rstrip(), "```"]
    return "\n".join(lines) + "\n"


