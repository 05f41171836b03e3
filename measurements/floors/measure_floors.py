"""The lowest version of each optional dependency that pip installs with fssl and that works (issue 78).

For each dependency, over its released versions (`pip index versions`, this Python's), a bisection for the
lowest version that passes, each candidate in a fresh venv:
  1. resolves: `pip install --dry-run --ignore-installed --report` of fssl's own dependencies (pyproject's
     [project].dependencies, torch included) plus the extra's requirements with the candidate pinned; every
     dependency resolved, nothing skipped (no --no-deps);
  2. installs: a real `pip install`, with dependencies, of the same requirements less torch and torchvision,
     held by constraints to the versions step 1 chose (so the venv holds what pip resolved jointly with torch);
  3. works: after the install, a .pth file appends the project's venv's site-packages AFTER the venv's own, so
     torch and torchvision (the ones step 1 resolved: 2.14.1, the cap of this machine's pip constraints) come
     from there instead of a multi-GB download; everything the venv installed shadows the project's copies. An
     import probe checks the candidate is the venv's own, then tests of the repository run on a snapshot of
     it (copied at the start, so concurrent edits do not move under the bisection; PYTHONPATH names it).
The bisection assumes that a version passes when the ones above it pass (it tests the newest first, stepping
down past a release pip cannot install yet, then halves); the version just below each floor is always one it
tested and saw fail, unless the floor is the lowest searched.

torch is measured the same way but borrows nothing: step 2 installs the candidate torch too, with the torchvision
the resolver picks for it (torchvision pins its torch: 2.4 takes 0.19, 2.3 0.18, ...) and the nvidia-* libraries
of PyPI's CUDA build (some 2.5 GB a candidate, run on the CPU); no .pth is written, and the probe checks torch
and torchvision are the venv's own. Its checks train tiny runs on the CPU through both trainers (the cohort
trainer against the sequential one, a batch of runs against each run alone, resumes after an exception, a kill -9
and an interrupted batch against uninterrupted runs), read checkpoints back, and run the models', partitions' and
configs' tests: each compares two computations on the candidate, never a float recorded on another torch (the
fingerprint, verify and paper-value tests are left out; the list and why beside DEPENDENCIES' torch). The search
starts at the declared floor, not the newest: 2.14.1 is the project's own torch, where the whole suite runs, and
is not downloaded again; below the start if it passes, above it if not. --budget-min stops the search between
candidates: the floor is then the lowest version seen passing, and floors.json names the versions left untested.

    python measurements/floors/measure_floors.py                 # every dependency: over an hour on 2 loaded cores
    python measurements/floors/measure_floors.py --only ray,mlflow
    python measurements/floors/measure_floors.py --only torch --budget-min 60   # some 10 min a torch candidate
    python measurements/floors/measure_floors.py --readme        # README.md again from floors.json

Writes floors.json (after every candidate) and README.md (its table, generated) beside this file. Runs one
pip or pytest at a time, niced, so a training job keeps its core. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECORD = HERE / "floors.json"
README = HERE / "README.md"
WORK = Path(tempfile.gettempdir()) / "fssl-floors"
MAIN_SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
# what the snapshot the checks run on holds: the package, its tests and the files they read
SNAPSHOT_PARTS = ("fssl_core", "tests", "flower-app", "conftest.py", "pyproject.toml")
# from the project's venv, never installed into a candidate's (step 3 above)
BORROWED = ("torch", "torchvision")
PIP_TIMEOUT_S = 1800
NEWEST_TRIES = 3                # the newest releases tried for one that passes, where the bisection starts
DELETIONS: list[subprocess.Popen] = []
MIN_FREE_GB = 10                # a candidate that installs torch starts only with this much disk free
CHECK_TIMEOUT_S = 1200


@dataclass
class Dependency:
    key: str                       # floors.json's key
    package: str                   # the PyPI name bisected
    extras: tuple[str, ...]        # where pyproject writes the floor: its extras ("dependencies": the core list)
    pin: str                       # the candidate's requirement, {v} its version
    since: str | None              # lowest version searched (None: the oldest this Python has); why in `why_since`
    why_since: str
    until: str | None = None       # highest version searched (None: the newest)
    with_: tuple[str, ...] = ()    # the extra's other requirements, {floor:KEY} = that dependency's measured floor
    imports: tuple[str, ...] = ()  # modules the probe imports; the first must be the candidate's own
    checks: tuple[tuple[str, ...], ...] = ()   # pytest argument lists, each must pass with no skip
    resolve_only: bool = False
    lowest_first: bool = False     # try the lowest right after the newest (expected to pass: one probe, not log2 n)
    borrows: bool = True           # torch and torchvision from the project's venv (step 3); False: installed too
    test_requirements: tuple[str, ...] = ("pytest",)   # installed beside the requirements, for the checks
    first: str | None = None       # tried first instead of the newest (the declared floor): passes, the search
                                   # goes below it; fails, above it, up to the newest
    newest_known: bool = False     # the newest passes without a candidate venv (the project's own version)
    note: str = ""                 # what the README says beside the floor
    probes: list = field(default_factory=list)


DEPENDENCIES = [
    Dependency(
        key="flwr-datasets", package="flwr-datasets", extras=("flower", "dev"), pin="flwr-datasets=={v}",
        since=None, why_since="every release",
        # with the newest flwr: flwr's floor is then measured with flwr-datasets at this floor
        with_=("flwr[simulation]",),
        imports=("flwr_datasets", "flwr_datasets.partitioner", "fssl_core.integrations.flower_datasets"),
        checks=(("tests/test_flower_datasets.py",),)),
    Dependency(
        key="flwr", package="flwr", extras=("flower", "dev"), pin="flwr[simulation]=={v}",
        since="1.26.0", why_since="below 1.26 `flwr run` does not run flower-app/ (it reads the federations from "
                                  "the app's pyproject: measurements/2026-11-27-flwr-floor.md, 1.21-1.25 fail)",
        with_=("flwr-datasets=={floor:flwr-datasets}",), lowest_first=True,
        note="searched from 1.26: below it `flwr run` does not run flower-app/ (the 2026-11-27 record)",
        imports=("flwr", "flwr.app", "flwr.serverapp", "ray", "fssl_core.integrations.flower"),
        # every algorithm through flwr's simulation (Ray). Not tests/test_flower.py's flwr_run: it needs the one
        # local SuperLink port, which other jobs on this machine take, and asserts Flower's default federation
        # size, which differs between releases; `flwr run` is the 2026-11-27 record's evidence instead
        checks=(("tests/test_flower.py", "-k", "payloads or app_config or cohort or every_algorithm"),)),
    Dependency(
        key="mlflow", package="mlflow", extras=("mlflow", "dev"), pin="mlflow=={v}",
        since="3.0.0", why_since="mlflow 3, the tracking API fssl_core/integrations/mlflow_*.py are written against",
        imports=("mlflow", "sqlalchemy", "fssl_core.integrations.mlflow_export"),
        # the export opens a sqlite tracking store, logs params, metrics and tags, and reads them back
        checks=(("tests/test_export_mlflow.py",),)),
    Dependency(
        key="mlflow+SQLAlchemy<2.1", package="mlflow", extras=(), pin="mlflow=={v}",
        since="3.0.0", why_since="the same, with SQLAlchemy held below 2.1 (the alternative: a bound, not a floor)",
        with_=("SQLAlchemy<2.1",), lowest_first=True,
        note="not written: this bound would lower mlflow's floor, holding every install below SQLAlchemy 2.1",
        imports=("mlflow", "sqlalchemy", "fssl_core.integrations.mlflow_export"),
        checks=(("tests/test_export_mlflow.py",),)),
    Dependency(
        key="ray", package="ray", extras=("ray", "dev"), pin="ray=={v}",
        since=None, why_since="every release this Python has",
        note="2.9.3 imports pkg_resources without declaring setuptools: absent from a venv without setuptools "
             "and from the project's (setuptools 84.2.1)",
        imports=("ray", "fssl_core.executors.ray"),
        # the executor's own tests: not the smoke reproductions (notebooks) nor the one that needs MLflow
        checks=(("tests/test_executor_ray.py", "-k", "not smoke_reproduction and not tracked_run"),)),
    Dependency(
        key="torch", package="torch", extras=("dependencies",), pin="torch=={v}",
        since=None, until="2.14.1", why_since="every release this Python has, up to 2.14.1, where this machine's pip "
                                              "constraints (/etc/xdg/pip/constraints.txt) cap torch",
        # installed for real, torchvision and the nvidia libraries with it (the resolver picks the torchvision of
        # the pinned torch); the project's venv lends nothing. The newest, 2.14.1, is the project's own: the
        # bisection starts at the declared floor instead of downloading it (>= 2.5 GB a candidate)
        borrows=False, first="2.4.0", newest_known=True, test_requirements=("pytest", "hypothesis"),
        imports=("torch", "torchvision", "fssl_core.engine.trainer", "fssl_core.learning.cohort"),
        note="below 2.3 torch._C._functorch has no maybe_current_level (fssl_core/models/grouped.py, the cohort "
             "trainer's grouped op, imports it); the newest, 2.14.1, not tried here: the project's own torch",
        # tiny runs through both trainers on the CPU: the cohort trainer (torch.func.vmap, functional_call)
        # against the sequential one, a batch of runs against each run alone, resumes (after an exception, a
        # kill -9, an interrupted batch) against uninterrupted runs, checkpoints read back (torch.load
        # weights_only), the SGD against torch.optim.SGD, the models, partitions and configs. Each compares
        # two computations on the same torch, never a float recorded on another: tests/test_fingerprint.py,
        # test_verify.py, test_paper_values.py and test_readme_numbers.py are left out (committed numbers),
        # so is test_run_ids.py (committed runs/, not in the snapshot; no torch), and test_config's notebook
        # plans (notebooks/, not in the snapshot; no torch). Of test_cohort/test_trainer,
        # the algorithms of gpu_check.TINY_COHORT (fedavg, fedsiam_d, fedmix: one of each trainer path), for
        # time, and not test_trainer's README table (README.md, docs/: not in the snapshot)
        checks=(("tests/test_training.py", "tests/test_models.py", "tests/test_partition.py", "tests/test_config.py",
                 "tests/test_store.py", "tests/test_store_integrity.py", "-k",
                 # nor what skips (a skip fails a check): the two parameters every partition reads, and the
                 # flwr_datasets partition (the [flower] extra's, measured above)
                 "not every_notebook_plan and not (does_not_read_it and (labeled_ratio or stream_parts)) "
                 "and not flwr_datasets"),
                ("tests/test_cohort.py", "tests/test_trainer.py", "-k",
                 "not readme and not fedavg_plus and not fedsiam_pi and not fedsiam_mt and not fedsiam_nosiam "
                 "and not fedsem and not fedfixmatch and not fedmatch and not fedcon"))),
]


def log(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, flush=True)


def run(command: list[str], timeout: int, **kwargs) -> tuple[int, str, float]:
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as stopped:
        code, output = 124, f"{stopped.stdout or ''}{stopped.stderr or ''}\ntimed out after {timeout} s"
    output = "\n".join(line for line in output.splitlines() if not line.startswith("WARNING: Location"))
    return code, output, time.monotonic() - start


def pip_reason(output: str) -> str:
    """pip's failure in one line: the conflicting requirements, else its last error."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if "The conflict is caused by:" in lines:
        causes = [line for line in lines[lines.index("The conflict is caused by:") + 1:] if " depends on " in line]
        return "conflict: " + "; ".join(causes[:4])
    errors = [line for line in lines if line.startswith("ERROR:") and "ResolutionImpossible" not in line]
    return (errors or lines or ["(no output)"])[-1][:400]


def pytest_outcome(code: int, output: str) -> tuple[bool, str]:
    """Passed only with something passed, nothing failed and nothing skipped (a module-level importorskip
    would otherwise pass as 'skipped'). The summary line, and the first error line when it failed."""
    lines = output.splitlines()
    summary = next((line.strip("= ") for line in reversed(lines) if re.search(r"\d+ (passed|failed|error|skipped)|"
                                                                              r"no tests ran", line)), "")
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?|skipped)", summary)}
    passed = code == 0 and counts.get("passed", 0) > 0 and not counts.get("skipped")
    if passed:
        return True, summary
    first = next((" ".join(line.split()) for line in lines if line.startswith("E ")), "")
    skip = next((line.strip() for line in lines if line.startswith("SKIPPED")), "")
    return False, "; ".join(part for part in (summary or f"exit {code}", first or skip) if part)[:400]


def released_versions(package: str) -> list[str]:
    """Oldest first, without local builds (+cpu: this machine's wheel, not a release)."""
    code, output, _ = run([sys.executable, "-m", "pip", "index", "versions", package], 300)
    line = next((line for line in output.splitlines() if line.startswith("Available versions:")), None)
    if code or line is None:
        raise SystemExit(f"pip index versions {package}: {pip_reason(output)}")
    return [v.strip() for v in reversed(line.split(":", 1)[1].split(",")) if "+" not in v]


def core_requirements(source: Path) -> list[str]:
    return tomllib.loads((source / "pyproject.toml").read_text())["project"]["dependencies"]


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def snapshot() -> Path:
    """The repository's checked files as they are now; checks run here (cwd first on sys.path: its fssl_core)."""
    target = WORK / "snapshot"
    shutil.rmtree(target, ignore_errors=True)
    for part in SNAPSHOT_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / part)
    return target


def probe_code(dep: Dependency, version: str) -> str:
    """Imports dep's modules; fails unless the candidate is the venv's own and torch the borrowed one (or, for a
    dependency that borrows nothing, torch and torchvision the venv's own)."""
    torch_from = repr(str(MAIN_SITE)) if dep.borrows else "sys.prefix"
    return (f"import importlib, importlib.metadata as md, sys\n"
            f"mods = [importlib.import_module(m) for m in {list(dep.imports)!r}]\n"
            f"assert md.version({dep.package!r}) == {version!r}, ('installed', md.version({dep.package!r}))\n"
            f"assert mods[0].__file__.startswith(sys.prefix), ('not the venv\\'s', mods[0].__file__)\n"
            f"import torch, torchvision\n"
            f"for m in (torch, torchvision): assert m.__file__.startswith({torch_from}), m.__file__\n"
            f"print({dep.package!r}, md.version({dep.package!r}), 'torch', torch.__version__, "
            f"'torchvision', torchvision.__version__, 'numpy', md.version('numpy'))\n")


def measure(dep: Dependency, version: str, floors: dict, source: Path) -> dict:
    """One candidate in a fresh venv: resolves, installs, works (the module docstring's steps 1-3)."""
    venv = WORK / f"venv-{dep.key.replace('<', '-lt-')}-{version}"
    shutil.rmtree(venv, ignore_errors=True)
    row = {"version": version, "resolved": False, "reason": "", "installed": None, "check_passed": None,
           "check": "", "seconds": 0.0}
    start = time.monotonic()
    try:
        subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        pip = [sys.executable, "-m", "pip", "--python", python, "install", "--no-input"]
        extra = [re.sub(r"\{floor:(.+?)\}", lambda m: floors[m.group(1)], r) for r in dep.with_]
        # the candidate replaces fssl's own requirement on it (torch>=2.3 would refuse every torch below 2.3)
        core = [r for r in core_requirements(source) if requirement_name(r) != dep.package]
        wanted = core + [dep.pin.format(v=version)] + extra
        report = venv / "report.json"
        code, output, seconds = run(pip + ["--dry-run", "--ignore-installed", "--report", str(report), *wanted],
                                    PIP_TIMEOUT_S)
        row["resolve_seconds"] = round(seconds, 1)
        if code:
            row["reason"] = pip_reason(output)
            return row
        chosen = {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"]
                  for item in json.loads(report.read_text())["install"]}
        row["resolved"], row["torch"] = True, chosen.get("torch")
        row["reason"] = f"resolved {len(chosen)} packages" + "".join(
            f", {name} {chosen[name]}" for name in ("torch", "torchvision", "numpy", "sqlalchemy", "ray", "rich", "flwr",
                                                    "flwr-datasets", "mlflow-skinny")
            if name in chosen and name != dep.package)
        if dep.resolve_only:
            return row
        constraints = venv / "constraints.txt"
        constraints.write_text("".join(f"{name}=={v}\n" for name, v in sorted(chosen.items())))
        without = [r for r in wanted if not dep.borrows or requirement_name(r) not in BORROWED]
        if not dep.borrows:          # gigabytes each: the venvs deleted so far are gone before this one fills
            for deletion in DELETIONS:
                deletion.wait()
        code, output, seconds = run(pip + ["-c", str(constraints), *without, *dep.test_requirements], PIP_TIMEOUT_S)
        row["install_seconds"], row["installed"] = round(seconds, 1), code == 0
        if code:
            row["reason"] = "install: " + pip_reason(output)
            return row
        if dep.borrows:
            # appended after the venv's own site-packages: the venv's packages win, torch comes from the project
            site = next((venv / "lib").glob("python*/site-packages"))
            (site / "zz_fssl_floors_project_venv.pth").write_text(
                f"import site; site.addsitedir({str(MAIN_SITE)!r})\n")
        # PYTHONPATH: the snapshot's fssl_core in every process, Ray's workers and Flower's too (not only cwd's)
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(source),
               "FSSL_DATA": os.environ.get("FSSL_DATA", str(ROOT.parent / "shared" / "data"))}
        code, output, seconds = run([python, "-c", probe_code(dep, version)], 600, cwd=source, env=env)
        if code:
            row["check_passed"], row["check"] = False, "import: " + (output.strip().splitlines() or ["?"])[-1][:300]
            return row
        row["probe"] = next((line for line in output.splitlines() if line.startswith(f"{dep.package} ")), "")
        summaries = []
        for args in dep.checks:
            code, output, seconds = run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args],
                                        CHECK_TIMEOUT_S, cwd=source, env=env)
            passed, summary = pytest_outcome(code, output)
            summaries.append(summary)
            row["check_seconds"] = round(row.get("check_seconds", 0) + seconds, 1)
            if not passed:
                row["check_passed"], row["check"] = False, " | ".join(summaries)
                return row
        row["check_passed"], row["check"] = True, " | ".join(summaries)
        return row
    finally:
        row["seconds"] = round(time.monotonic() - start, 1)
        discard(venv)


def discard(venv: Path) -> None:
    """Deleted beside the next candidate: a venv of some 30,000 files takes minutes to delete on a loaded disk."""
    if venv.exists():
        trash = venv.with_name(f"trash-{time.monotonic_ns()}")
        venv.rename(trash)
        DELETIONS.append(subprocess.Popen(["rm", "-rf", str(trash)]))


def passes(row: dict, dep: Dependency) -> bool:
    return row["resolved"] and (dep.resolve_only or bool(row["check_passed"]))


def stop_reason(dep: Dependency, clock: dict) -> str | None:
    """Why no further candidate starts: the time budget (--budget-min) spent, or too little disk for a candidate
    that installs torch (some 6 GB a venv, and pip's cache)."""
    if clock.get("deadline") and time.monotonic() > clock["deadline"]:
        return f"the time budget (--budget-min {clock['budget_min']}) ran out"
    free_gb = shutil.disk_usage(WORK).free / 2**30
    if not dep.borrows and free_gb < MIN_FREE_GB:
        return f"{free_gb:.0f} GB free on {WORK}, under {MIN_FREE_GB}"
    return None


def bisect(dep: Dependency, versions: list[str], floors: dict, source: Path, record: dict, clock: dict) -> None:
    """The lowest passing version, testing the newest first (or dep.first); writes the record after every
    candidate. Stopped early (stop_reason), the floor is the lowest passing version tried, and the versions
    between it and the highest failing one are named untested."""
    entry = record["dependencies"][dep.key]
    tried: dict[str, dict] = {}

    def test(i: int) -> bool:
        version = versions[i]
        if version not in tried:
            log(f"[{dep.key}] {shutil.disk_usage(WORK).free / 2**30:.0f} GB free on {WORK}")
            left = remaining_probes(clock, dep.key, lo, hi)
            eta = f", ETA ~{left * clock['mean_s'] / 60:.0f} min for ~{left} candidates" if clock["mean_s"] else ""
            log(f"[{dep.key}] {version} ({i + 1} of {len(versions)} in range, probe {len(tried) + 1}{eta})")
            row = measure(dep, version, floors, source)
            tried[version] = row
            entry["probes"].append(row)
            clock["n"] += 1
            clock["total_s"] += row["seconds"]
            clock["mean_s"] = clock["total_s"] / clock["n"]
            write(record)
            verdict = "PASS" if passes(row, dep) else "fail"
            log(f"[{dep.key}] {version}: {verdict} in {row['seconds']:.0f} s; {row['reason']}"
                + (f"; check: {row['check']}" if row["check"] else ""))
        return passes(tried[version], dep)

    lo, hi = 0, len(versions) - 1
    if dep.first:                  # the declared floor: below it if it passes, above it if not
        start = versions.index(dep.first)
        if test(start):
            hi = start
        else:
            lo = start + 1
    if not dep.newest_known or not dep.first:
        while not test(hi):        # a release pip cannot install yet (its parts not all published) is stepped over
            if hi == 0 or len(tried) == NEWEST_TRIES:
                entry["floor"], entry["note"] = None, f"the newest {len(tried)} fail: no floor"
                return
            hi -= 1
        entry["newest_passing"] = versions[hi]
    if dep.lowest_first:
        if test(lo):
            hi = lo
        else:
            lo = 1
    while lo < hi:
        stop = stop_reason(dep, clock)
        if stop:
            log(f"[{dep.key}] stopped: {stop}")
            # versions[lo:hi] untested between the floor and the highest failing version: none is "just below"
            entry["floor"], entry["below_floor"], entry["untested"] = versions[hi], None, versions[lo:hi]
            entry["highest_failing"] = versions[lo - 1] if lo > 0 and versions[lo - 1] in tried else None
            entry["note"] = "; ".join(p for p in (entry.get("note"), f"stopped ({stop}): {', '.join(versions[lo:hi])} "
                                                  f"untested") if p)
            return
        mid = (lo + hi) // 2
        if test(mid):
            hi = mid
        else:
            lo = mid + 1
    if versions[lo] not in tried and not test(lo):     # the newest, known to pass, is the only one left
        entry["floor"], entry["note"] = None, f"{versions[lo]}, the newest, fails in a fresh venv: no floor"
        return
    entry["floor"] = versions[lo]
    entry["below_floor"] = versions[lo - 1] if lo > 0 else None     # tested and failed, by the bisection


def remaining_probes(clock: dict, key: str, lo: int, hi: int) -> int:
    ahead = clock["order"][clock["order"].index(key) + 1:]
    return math.ceil(math.log2(max(hi - lo + 1, 1))) + 1 + sum(clock["sizes"][k] for k in ahead)


def write(record: dict) -> None:
    RECORD.write_text(json.dumps(record, indent=1) + "\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")      # a pipe inside a markdown table cell


def readme(record: dict) -> str:
    """README.md, from floors.json alone."""
    deps = record["dependencies"]
    floors = ["| dependency | floor | the version below it | searched | candidates tried | how | note | code measured |",
              "|---|---|---|---|---|---|---|---|"]
    for key, entry in deps.items():
        below = "-" if entry.get("written_floor") else entry.get("below_floor") or "-"   # a declared floor: none
        floors.append(f"| {key} | {entry.get('written_floor') or entry.get('floor')} | {below} | {entry['range'][0]} to {entry['range'][1]} "
                      f"({entry['candidates']}) | {len(entry['probes'])} | {entry['how']} | {entry.get('note', '')} | "
                      f"{entry.get('code', '')} |")
    probes = ["| dependency | version | resolves | pip says | installs | check | check says | seconds |",
              "|---|---|---|---|---|---|---|---|"]
    yes = {True: "yes", False: "no", None: "-"}
    for key, entry in deps.items():
        for row in sorted(entry["probes"], key=lambda r: [int(x) if x.isdigit() else x
                                                          for x in re.split(r"[.]", r["version"])]):
            probes.append(f"| {key} | {row['version']} | {yes[row['resolved']]} | {_cell(row['reason'])} | "
                          f"{yes[row['installed']]} | {yes[row['check_passed']]} | {_cell(row['check'])} | "
                          f"{row['seconds']:.0f} |")
    return (f"# Floors of fssl's optional dependencies, measured {record['measured']} (issue 78)\n\n"
            f"Generated by `python measurements/floors/measure_floors.py --readme` from `floors.json`; the method is "
            f"that script's docstring. {record['machine']}; Python {record['python']}, pip {record['pip']}; "
            f"{record['seconds'] / 60:.0f} minutes of candidates in all (code measured: the working tree when a "
            f"run began, its commit and how many tracked files differed from it). `tests/test_floors.py` keeps pyproject.toml's extras, environment.yml and "
            f"flower-app/pyproject.toml at these floors.\n\n"
            + "\n".join(floors) + "\n\nEvery candidate tried (each in a fresh venv; a check is run only for a "
            "candidate that installs):\n\n" + "\n".join(probes) + "\n\nTo measure again (all, or some), then this "
            "page from the record:\n\n```bash\npython measurements/floors/measure_floors.py\n"
            "python measurements/floors/measure_floors.py --only ray,mlflow\n"
            "python measurements/floors/measure_floors.py --readme\n```\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated keys of DEPENDENCIES (default: all)")
    parser.add_argument("--readme", action="store_true", help="write README.md from floors.json and stop")
    parser.add_argument("--budget-min", type=float, default=0,
                        help="start no candidate after this many minutes (0: none); the search stops where it is")
    args = parser.parse_args()
    if args.readme:
        README.write_text(readme(json.loads(RECORD.read_text())))
        return
    keys = [d.key for d in DEPENDENCIES]
    chosen = [k for k in args.only.split(",") if k] or keys
    unknown = [k for k in chosen if k not in keys]
    if unknown:
        raise SystemExit(f"--only={args.only}: {unknown} unknown; one of {keys}")
    os.nice(10)
    WORK.mkdir(parents=True, exist_ok=True)
    record = json.loads(RECORD.read_text()) if RECORD.exists() and args.only else {"dependencies": {}}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True)
    pip_version = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    record.update(measured=time.strftime("%Y-%m-%d"), python=platform.python_version(),
                  pip=pip_version.stdout.split()[1],
                  machine=f"{platform.machine()} Linux, {os.cpu_count()} CPU cores shared with a training job")
    source = snapshot()
    code = f"{time.strftime('%Y-%m-%d %H:%M')}: {commit.stdout.strip()} + {len(dirty.stdout.splitlines())} changed files"
    started = time.monotonic()
    plan = []
    for dep in DEPENDENCIES:
        if dep.key not in chosen:
            continue
        versions = released_versions(dep.package)
        versions = versions[versions.index(dep.since) if dep.since else 0:
                            versions.index(dep.until) + 1 if dep.until else None]
        plan.append((dep, versions))
        log(f"{dep.key}: {len(versions)} releases from {versions[0]} to {versions[-1]} ({dep.why_since})")
    clock = {"n": 0, "total_s": 0.0, "mean_s": 0.0, "order": [d.key for d, _ in plan],
             "sizes": {d.key: math.ceil(math.log2(len(v))) + 1 for d, v in plan},
             "budget_min": args.budget_min, "deadline": started + args.budget_min * 60 if args.budget_min else None}
    log(f"about {sum(clock['sizes'].values())} candidates to try, one at a time")
    floors = {k: e["floor"] for k, e in record["dependencies"].items() if e.get("floor")}
    needed = {m for d, _ in plan for r in d.with_ for m in re.findall(r"\{floor:(.+?)\}", r)}
    if needed - set(floors) - set(clock["order"]):
        raise SystemExit(f"--only={args.only}: needs the floor of {sorted(needed - set(floors))}, measured "
                         f"neither before (floors.json) nor now; add it to --only")
    for dep, versions in plan:
        checks = " && ".join("pytest " + " ".join(f"'{a}'" if " " in a else a for a in c) for c in dep.checks)
        record["dependencies"][dep.key] = {
            "package": dep.package, "requirement": dep.pin, "with": list(dep.with_), "extras": list(dep.extras),
            "range": [versions[0], versions[-1]], "candidates": len(versions), "why_range": dep.why_since,
            "how": "resolver only (pip --dry-run)" if dep.resolve_only else
                   f"resolves, installs{'' if dep.borrows else ' (torch and torchvision too: nothing borrowed)'}, "
                   f"{checks}",
            "probes": [], "floor": None, "note": dep.note, "code": code}
        bisect(dep, versions, floors, source, record, clock)
        entry = record["dependencies"][dep.key]
        entry["seconds"] = round(sum(row["seconds"] for row in entry["probes"]))
        if entry["floor"]:
            floors[dep.key] = entry["floor"]
        log(f"[{dep.key}] floor {entry['floor']} (below it: {entry.get('below_floor')})")
        write(record)
    for deletion in DELETIONS:
        deletion.wait()
    record["seconds"] = sum(entry["seconds"] for entry in record["dependencies"].values())
    write(record)
    README.write_text(readme(record))
    log(f"done in {(time.monotonic() - started) / 60:.0f} min: {RECORD.relative_to(ROOT)}, {README.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
