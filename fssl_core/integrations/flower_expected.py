"""The Flower app's expected results (flower-app/README.md): `python -m fssl_core.integrations.flower_expected`.

For each of EXPECTED's configs: `flwr run flower-app` trains it into the run store (a local SuperLink in a
Flower home of its own, stopped after), timed from the command's start to its end; then fssl's engine trains
the same config into a scratch store, timed likewise. Both records' rows give the CSV (one line a round and
side: accuracy, seconds) and its figure, accuracy by round; the README's table is rendered from the CSV
(`table`, checked by tests/test_flower_expected.py, with the Flower records in the store).
"""
from __future__ import annotations

import csv
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..engine.trainer import train
from ..run_config import RunConfig
from ..store import RunStore, describe
from .flower_keys import app_overrides

HERE = Path(__file__).resolve().parent
APP = HERE.parents[1] / "flower-app"
CSV = HERE / "flower_expected.csv"
FIGURE = HERE / "flower_expected.png"
COMMON = dict(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=10, clients_per_round=3, rounds=10,
              local_epochs=1, batch_size=10, resplit_train=6000, resplit_test=2000, trainer="sequential")
EXPECTED = {"FedAvg": RunConfig(algorithm="fedavg", **COMMON),
            "FedSiam-D": RunConfig(algorithm="fedsiam_d", **COMMON),
            # plain SGD, as FedSiam's cells run FedMatch (its official optimiser: papers/fedsiam/cells.py)
            "FedMatch": RunConfig(algorithm="fedmatch", **{**COMMON, "momentum": 0.0})}
COLUMNS = ["method", "run_id", "side", "round", "accuracy", "wall_seconds", "machine"]


def flwr_run(cfg: RunConfig, runs: Path, check: bool = True) -> tuple[float, str, int]:
    """Train `cfg` as a Flower user runs the app, `python -m fssl_core flower flower-app --run-config "..."` (flwr
    run, then a wait for the run's end) on Flower's default federation, into the store at `runs`, on a local
    SuperLink in a Flower home of its own, stopped after; the command's wall seconds (SuperLink start included),
    its output and its exit status (with `check`, anything but 0 or a run missing from the store ends here)."""
    if shutil.which("flwr", path=str(Path(sys.executable).parent)) is None and shutil.which("flwr") is None:
        raise SystemExit("error: no `flwr` command: pip install -e '.[flower]'")
    home = Path(tempfile.mkdtemp(prefix="fssl-flwr-home-"))
    env = {**os.environ, "FLWR_HOME": str(home), "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "fssl_core", "flower", str(APP), "--run-config",
                               f"{app_overrides(cfg)} runs={json.dumps(str(runs.resolve()))} progress=false"],
                              env=env, capture_output=True, text=True)
    finally:
        stop_superlink(home)
        shutil.rmtree(home, ignore_errors=True)
    from .flower import flower_trainer        # flwr: the [flower] extra; reading the CSV (read, table) needs none
    if check and (done.returncode != 0 or RunStore(runs).load(flower_trainer(cfg)) is None):
        raise SystemExit(f"error: flwr run of {describe(cfg)} failed (exit {done.returncode}):\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")
    return time.perf_counter() - start, done.stdout + done.stderr, done.returncode


def superlinks(home: Path | None = None) -> list[int]:
    """The pids of the local SuperLinks running (Linux's /proc); with `home`, only the one whose command line
    names its database under that Flower home."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"flower-superlink") for part in command[:2]) and \
                (home is None or str(home).encode() in b" ".join(command)):
            found.append(int(proc.name))
    return found


def stop_superlink(home: Path) -> list[int]:
    """Stop the local SuperLink that `flwr run` started with Flower home `home` (it outlives the command, by
    Flower's design); the pids stopped."""
    stopped = []
    for pid in superlinks(home):
        try:
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(pid) for pid in stopped):
        time.sleep(0.2)
    return stopped


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def measure(runs: Path | None = None) -> list[dict]:
    runs = RunStore(runs).root
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    rows = []
    with tempfile.TemporaryDirectory(prefix="fssl-engine-") as scratch:
        for i, (method, cfg) in enumerate(EXPECTED.items(), 1):
            if RunStore(runs).load(cfg) is not None:
                raise SystemExit(f"error: {describe(cfg)} is in {runs} already: its Flower time would not be "
                                 f"measured; delete {RunStore(runs).dir(cfg)} first")
            print(f"[flower expected] {i}/{len(EXPECTED)} {method}: flwr run ...", file=sys.stderr)
            flower_seconds, _, _ = flwr_run(cfg, runs)
            print(f"[flower expected] {i}/{len(EXPECTED)} {method}: fssl's engine ...", file=sys.stderr)
            start = time.perf_counter()
            engine = train(cfg, RunStore(scratch), progress=False)
            engine_seconds = time.perf_counter() - start
            flower = RunStore(runs).load(cfg)
            for side, result, seconds in (("flower", flower, flower_seconds), ("engine", engine, engine_seconds)):
                for row in result.metrics:
                    rows.append({"method": method, "run_id": cfg.run_id, "side": side, "round": row["round"],
                                 "accuracy": row["accuracy"], "wall_seconds": round(seconds, 1), "machine": machine})
    return rows


def write(rows: list[dict]) -> None:
    with CSV.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    plot(rows)


def read() -> list[dict]:
    with CSV.open(newline="") as f:
        return [{**row, "round": int(row["round"]), "accuracy": float(row["accuracy"]),
                 "wall_seconds": float(row["wall_seconds"])} for row in csv.DictReader(f)]


def plot(rows: list[dict]) -> None:
    import matplotlib       # matplotlib, for the figure alone: Agg chosen before pyplot loads
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt     # as matplotlib's
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for method in dict.fromkeys(r["method"] for r in rows):
        color = None
        for side in ("engine", "flower"):
            mine = [r for r in rows if r["method"] == method and r["side"] == side]
            style = dict(linestyle="-") if side == "engine" else dict(linestyle="none", marker="o", markersize=5)
            line, = ax.plot([r["round"] for r in mine], [r["accuracy"] for r in mine], color=color,
                            label=f"{method}, {'Flower app' if side == 'flower' else 'fssl engine'}", **style)
            color = line.get_color()
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("MNIST IID, γ=0.05, 10 clients (3 a round): Flower app vs fssl engine", fontsize=9)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=120)
    plt.close(fig)


def table(rows: list[dict]) -> str:
    """The README's table: per method, final accuracy and wall time of each side."""
    lines = ["| method | run | final accuracy, Flower / engine | wall time, Flower / engine |", "|---|---|---|---|"]
    for method in dict.fromkeys(r["method"] for r in rows):
        last = {side: max((r for r in rows if r["method"] == method and r["side"] == side), key=lambda r: r["round"])
                for side in ("flower", "engine")}
        f, e = last["flower"], last["engine"]
        lines.append(f"| {method} | `{f['run_id']}` | {f['accuracy']:.2f}% / {e['accuracy']:.2f}% | "
                     f"{f['wall_seconds']:.0f} s / {e['wall_seconds']:.0f} s |")
    return "\n".join(lines)


def main() -> int:
    rows = measure()
    write(rows)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
