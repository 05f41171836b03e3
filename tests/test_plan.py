"""The main job: notebooks declare their runs in a `plan` cell, the plan counts and estimates them,
the headline profile is the cells it promises, and an interrupt leaves no worker behind."""
import ast
import inspect
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import nbformat
import papermill
import pytest

from fssl_core.run_config import RunConfig
from fssl_core.papers import notebook_plans
from fssl_core.job.plan import JobPlan, _estimate, plan_job, plan_notebook
from fssl_core.profiles import PROFILES
from fssl_core.job.reproduce import HEADLINE_NOTEBOOKS, notebooks
from fssl_core.store import RunStore

from .conftest import requires_mnist
from .fake_runs import fake_finished_run, row

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
BUILDER = re.compile(r"\.\w+_(cells|configs)\(")     # fedsiam.table5_cells(...), fedanchor.figure5_configs(...)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebooks_runs_come_from_its_plan_function_called_with_its_own_parameters(path):
    """The job trains what the notebook's plan function gives: no cell builder is called in a notebook, and
    its plan cell calls the function the job's plan calls (papers' NOTEBOOK_PLANS), passing the notebook's
    profile, device and, by name, each parameter the function takes."""
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not BUILDER.search(cell.source), f"{path.name}: a cell builder in the notebook:\n{cell.source}"
    function = notebook_plans().get(path.stem)
    if function is None:
        return
    plan_cells = [c for c in nb.cells if c.cell_type == "code" and "plan" in c.metadata.get("tags", [])]
    assert len(plan_cells) == 1, f"{path.name}: one cell tagged plan"
    calls = [n for n in ast.walk(ast.parse(plan_cells[0].source)) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == function.__name__
             and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "plans"]
    assert len(calls) == 1, f"{path.name}: its plan cell calls {function.__module__}.{function.__name__} once"
    call = calls[0]
    assert [a.id for a in call.args] == ["profile", "device"]
    taken = [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert {k.arg: k.value.id for k in call.keywords} == {name: name for name in taken}
    assert set(taken) <= set(papermill.inspect_notebook(str(path))), f"{path.name} declares every parameter it passes"


def test_the_plan_reads_a_notebooks_runs_without_executing_it(tmp_path):
    """plan_notebook never runs a notebook's code: a copy whose plan cell would write a file and fail still
    plans the runs of its plan function, and no file appears."""
    source = next(p for p in NOTEBOOKS if p.stem == "fedmix_figure4")
    nb = nbformat.read(str(source), as_version=4)
    marker = tmp_path / "executed"
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" not in cell.metadata.get("tags", []):
            cell.source = f"open({str(marker)!r}, 'w').write('ran')\nraise RuntimeError('executed')\n"
    copy = tmp_path / source.name
    nbformat.write(nb, str(copy))
    planned, real = plan_notebook(copy, {"profile": "quick"}), plan_notebook(source, {"profile": "quick"})
    assert not marker.exists()
    assert [c.run_id for c in planned.configs] == [c.run_id for c in real.configs] and len(real.configs) > 5


def test_headline_notebooks_come_first_and_are_all_the_headline_profile_runs():
    assert [p.stem for p in notebooks(profile="quick")[:3]] == list(HEADLINE_NOTEBOOKS)
    assert [p.stem for p in notebooks(profile="headline")] == list(HEADLINE_NOTEBOOKS)


def test_profiles_at_paper_protocol_and_their_scopes():
    assert PROFILES["smoke"].at_paper_protocol().name == "smoke"      # one knob: smoke never trains a long run
    assert PROFILES["quick"].at_paper_protocol().name == "paper"
    assert PROFILES["headline"].at_paper_protocol().name == "paper"
    full, quick = ["a", "b", "c"], ["a", "b"]
    assert PROFILES["paper"].scope(full, quick, ["a"], []) == full
    assert PROFILES["quick"].scope(full, quick, ["a"], []) == quick
    assert PROFILES["smoke"].scope(full, quick, ["a"], []) == ["a"]
    assert PROFILES["headline"].scope(full, quick, ["a"], []) == []
    assert PROFILES["headline"].scope(full, quick) == quick               # no headline slice: quick's


@requires_mnist
def test_the_headline_plan_is_each_papers_headline_cells_at_quick(tmp_path, monkeypatch):
    monkeypatch.delenv("FSSL_PROFILE")           # the suite's override (smoke) would replace the profile
    job = plan_job(notebooks(profile="headline"), {"profile": "headline", "device": "cpu"}, RunStore(tmp_path))
    by_notebook = {nb.notebook: nb.runnable() for nb in job.notebooks}
    fedsiam = by_notebook["fedsiam_table5"]
    assert sorted(c.algorithm for c in fedsiam) == ["fedavg", "fedavg_plus", "fedsiam_d", "fedsiam_mt", "fedsiam_pi"]
    assert {(c.dataset, c.partition, c.labeled_ratio, c.local_epochs, c.rounds, c.seed) for c in fedsiam} == \
        {("mnist", "iid", 0.10, 1, 50, 1234)}          # quick's protocol: R_L = 1, R_G = 50, one seed
    assert sorted(c.algorithm for c in by_notebook["fedmix_streaming_fmnist"]) == \
        ["fedmatch", "fedmix", "supervised_server"]
    assert len(by_notebook["fedanchor_fmnist"]) == 3
    assert len(job.pending) == 11 and job.stored == []
    assert all(job.estimate_source[c.run_id] == "reference" for c in job.pending)   # from results/*.csv


def test_a_dry_plan_proves_stored_runs_by_their_digests_without_opening_a_checkpoint(tmp_path, monkeypatch):
    """A dry run's plan serves nothing, so it proves a stored run by its files' digests and its checkpoint's sha256
    without unpickling the checkpoint (torch.load: the import a dry run avoids); a checkpoint whose bytes changed
    still disagrees, so its run is planned again; a plan that serves opens it."""
    from fssl_core.store import integrity
    monkeypatch.delenv("FSSL_PROFILE")
    store = RunStore(tmp_path)
    job = plan_job(notebooks(profile="headline"), {"profile": "headline", "device": "cpu"}, store, download=False)
    kept, altered = job.pending[:2]
    for cfg in (kept, altered):
        fake_finished_run(store, cfg, [row(r, 50.0) for r in range(1, cfg.rounds + 1)])
    with open(store.dir(altered) / "checkpoint.pt", "ab") as f:
        f.write(b"\0")
    opened, read = [], integrity.read_checkpoint
    monkeypatch.setattr(integrity, "read_checkpoint", lambda path, *a, **k: opened.append(path) or read(path, *a, **k))
    dry = plan_job(notebooks(profile="headline"), {"profile": "headline", "device": "cpu"}, store, download=False,
                   open_checkpoints=False)
    assert opened == [] and [c.run_id for c in dry.stored] == [kept.run_id]
    assert altered.run_id in {c.run_id for c in dry.pending}
    plan_job(notebooks(profile="headline"), {"profile": "headline", "device": "cpu"}, store, download=False)
    assert opened == [store.dir(kept) / "checkpoint.pt"]


def _reproduce_in_isolation(tmp_path, monkeypatch):
    """reproduce's module with a throw-away run store, its environment exports undone after the test, and
    notebook execution and publishing forbidden."""
    import papermill

    from fssl_core.job import reproduce as reproduce_module
    monkeypatch.delenv("FSSL_PROFILE")
    for name in ("FSSL_DATA", "FSSL_PROJECT"):          # reproduce exports both for its kernels: undone after
        present = name in os.environ
        monkeypatch.setenv(name, os.environ.get(name, ""))
        if not present:
            monkeypatch.delenv(name)
    monkeypatch.setenv("FSSL_RUNS", str(tmp_path / "runs"))

    def forbidden(*args, **kwargs):
        raise AssertionError("a notebook was executed or results were published")
    monkeypatch.setattr(reproduce_module, "merge_results", forbidden)
    monkeypatch.setattr(papermill, "execute_notebook", forbidden)
    return reproduce_module


@requires_mnist
def test_a_dry_run_prints_the_plan_and_trains_executes_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from fssl_core.paths import project_root
    reproduce_module = _reproduce_in_isolation(tmp_path, monkeypatch)
    monkeypatch.setattr("fssl_core.executors.run_all", lambda *a, **k: pytest.fail("a dry run trained something"))
    results = project_root() / "results"
    before = {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()}
    assert reproduce_module.reproduce(profile="headline", only="fedsiam_table5", dry_run=True) is None
    out = capsys.readouterr().out
    assert "[plan] 1 notebook(s), 5 run(s): 5 to train, 0 read back from the run store" in out
    assert "[plan]   fedsiam_table5: 5 run(s), 5 to train" in out and out.rstrip().endswith("nothing trained, executed or written")
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@requires_mnist
def test_train_only_trains_the_plans_runs_and_executes_and_publishes_nothing(tmp_path, monkeypatch, capsys):
    reproduce_module = _reproduce_in_isolation(tmp_path, monkeypatch)
    trained = []
    monkeypatch.setattr("fssl_core.executors.run_all", lambda configs, **kwargs: trained.extend(configs))
    assert reproduce_module.reproduce(profile="headline", only="fedsiam_table5", train_only=True) is None
    assert sorted(c.algorithm for c in trained) == ["fedavg", "fedavg_plus", "fedsiam_d", "fedsiam_mt", "fedsiam_pi"]
    assert capsys.readouterr().out.rstrip().endswith("5 run(s) trained; no notebook executed, nothing published")


def _finished_run(store: RunStore, cfg: RunConfig, seconds_per_round: float) -> None:
    fake_finished_run(store, cfg, [row(r, 90.0, seconds=seconds_per_round) for r in range(1, cfg.rounds + 1)])


def test_estimates_come_from_this_stores_runs_of_the_same_kind_and_pack_onto_workers(tmp_path):
    store = RunStore(tmp_path)
    base = RunConfig(dataset="mnist", algorithm="fedavg", rounds=10)
    _finished_run(store, base.replace(seed=1), seconds_per_round=4.0)
    same_kind = base.replace(seed=2, rounds=30)
    other_kind = base.replace(seed=2, algorithm="fedsiam_d")
    job = JobPlan([], [same_kind, other_kind], [])
    _estimate(job, store, profile="smoke")          # smoke: no reference rows
    assert job.estimate[same_kind.run_id] == 4.0 * 30 and job.estimate_source[same_kind.run_id] == "this store"
    assert job.estimate_source[other_kind.run_id] == "guess"
    # a run of the same method on another split and labeled ratio: that method's speed here, not the guess
    other_split = base.replace(seed=2, partition="noniid1", labeled_ratio=0.2)
    job = JobPlan([], [other_split], [])
    _estimate(job, store, profile="smoke")
    assert job.estimate[other_split.run_id] == 4.0 * 10 and job.estimate_source[other_split.run_id] == "this store, same method"
    assert "this machine's runs of the same method on other splits" in job.describe(workers=1)
    job = JobPlan([], [same_kind, other_kind], [])
    _estimate(job, store, profile="smoke")
    # longest first onto the least loaded worker: [120, 60] on one each; plus 50 -> 110 beside 120
    job.estimate[other_kind.run_id] = 60.0
    third = base.replace(seed=3, algorithm="fedavg_plus")
    job.pending.append(third)
    job.estimate[third.run_id] = 50.0
    assert job.seconds(workers=2) == 120.0 and job.seconds(workers=1) == 230.0


def test_a_reference_time_comes_from_its_own_tables_row_and_never_from_an_untimed_one(tmp_path):
    import math

    import pandas as pd

    from fssl_core.job.plan import NotebookPlan, _reference_seconds
    from fssl_core.report.tables import COLUMNS, Cell
    ours = RunConfig(dataset="mnist", algorithm="fedsiam_d", partition="noniid2", local_epochs=5, rounds=50)
    theirs = ours.replace(model="cnn_mnist_authors")
    cells = [Cell("fedsiam", table, "noniid2", "0.10", "mnist", "fedsiam_d", (cfg,))
             for table, cfg in (("table5", ours), ("table5_authors_network", theirs))]
    rows = (("table5", 900.0, 2), ("table5_authors_network", 878.0, 1),
            ("table5_authors_code", math.nan, 3))            # their code, run outside fssl: no time
    pd.DataFrame([{**dict.fromkeys(COLUMNS, ""), "table": table, "setting": "noniid2", "labeled": "0.10",
                   "dataset": "mnist", "method": "fedsiam_d", "metric": "accuracy", "profile": "paper",
                   "seconds": seconds, "n_runs": runs} for table, seconds, runs in rows]
                 ).to_csv(tmp_path / "nb.csv", index=False)
    job = JobPlan([NotebookPlan("nb", cells, [ours, theirs])], [ours, theirs], [])
    assert _reference_seconds(job, "paper", results=tmp_path) == {ours.run_id: 450.0, theirs.run_id: 878.0}


def _processes_with(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and proc.name != str(os.getpid()):
            try:
                if marker.encode() in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                pass
    return found


@requires_mnist
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")
def test_sigterm_stops_the_job_and_every_worker(tmp_path):
    marker = f"FSSL_TEST_MARKER={uuid.uuid4().hex}"
    script = textwrap.dedent(f"""
        from fssl_core.run_config import RunConfig
        from fssl_core.executors import run_all
        from fssl_core.store import RunStore
        configs = [RunConfig(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2,
                             local_epochs=1, rounds=1000, batch_size=10, seed=s) for s in (1, 2)]
        run_all(configs, store=RunStore({str(tmp_path)!r}), workers=2, progress=False)
    """)
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    job = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(list(tmp_path.glob("*/metrics.jsonl"))) < 2 and time.time() < deadline:   # both workers training
        time.sleep(0.5)
    assert len(_processes_with(marker)) >= 3, "expected the job and its two workers"
    job.send_signal(signal.SIGTERM)
    job.wait(timeout=60)
    time.sleep(1)
    assert _processes_with(marker) == [], "a worker outlived the job"
    assert job.returncode != 0
    assert not list(tmp_path.glob("*/result.json"))          # nothing claims to have finished


def test_a_missing_data_set_is_said_once_in_the_plan_with_where_it_was_looked_for(tmp_path, monkeypatch, capsys):
    """Offline without MNIST: the plan's line names the data set, the runs it skips and where it looked; nothing
    else on the console says it again (the notebooks' kernels say it in their own outputs)."""
    from fssl_core.data import availability as report
    report.unavailable_reason.cache_clear()
    report.dataset_available.cache_clear()
    monkeypatch.setenv("FSSL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("FSSL_OFFLINE", "1")
    try:
        cfgs = [RunConfig(seed=s) for s in (1, 2)]
        plan = plan_job([], {}, RunStore(tmp_path))
        plan.needs_data = {"mnist": len(cfgs)}
        text = plan.describe(workers=1)
        assert text.count("mnist") == 1 and ("needs-data, 2 run(s): data set 'mnist' was not found (or failed "
                                             f"torchvision's integrity check) under root {tmp_path / 'data'}") in text
        assert "needs-data" not in capsys.readouterr().err
    finally:
        report.unavailable_reason.cache_clear()
        report.dataset_available.cache_clear()


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_the_eta_starts_at_the_plans_minutes_counts_down_and_rises_only_when_work_finishes_slower(tmp_path):
    from fssl_core.executors.progress import JobProgress
    configs = [RunConfig(seed=s, rounds=10) for s in (1, 2, 3)]
    estimate = {configs[0].run_id: 120.0, configs[1].run_id: 60.0, configs[2].run_id: 50.0}
    plan = JobPlan([], configs, [], estimate=dict(estimate))
    clock = FakeClock()
    job = JobProgress(configs, RunStore(tmp_path), estimate, enabled=False, slots=2, clock=clock)
    assert job.eta.seconds() == plan.seconds(workers=2) == 120.0         # one model, one figure
    seen = []
    for _ in range(100):                  # 100 s in which no round finishes: the ETA only counts down
        clock.now += 1.0
        job.eta.revise(0.0, 230.0)
        seen.append(job.eta.seconds())
    assert seen == sorted(seen, reverse=True) and seen[-1] == 20.0
    clock.now += 100.0                    # at 200 s, the first 100 estimated seconds of work have finished
    job.eta.revise(100.0, 230.0)           # a pace of 2 wall s per estimated s: 130 left -> 260 s
    assert job.eta.seconds() == pytest.approx(260.0)
    clock.now += 60.0
    job.eta.revise(100.0, 230.0)           # nothing more finished: counting down again
    assert job.eta.seconds() == pytest.approx(200.0)


def _resumed(store, cfg, rounds):
    store.dir(cfg).mkdir(parents=True, exist_ok=True)
    (store.dir(cfg) / "metrics.jsonl").write_text("".join(f'{{"round": {r}}}\n' for r in range(1, rounds + 1)))


def test_the_eta_of_a_resumed_job_counts_only_the_rounds_this_job_trains(tmp_path):
    """A run of 100 rounds (estimated 100 s) resumed after round 42: the plan and the bar start at 58 s; 10 rounds
    in 10 s later the pace is 1 s a round and 48 rounds are left: 48 s (counting the resumed 42 as this job's work
    would give 9.2 s, then 14:41:43 once the pace is measured on the next run, as seen on main)."""
    from fssl_core.executors.progress import JobProgress
    from fssl_core.job.plan import resumed_rounds
    store, cfg = RunStore(tmp_path), RunConfig(seed=1, rounds=100)
    _resumed(store, cfg, 42)
    plan = JobPlan([], [cfg], [], estimate={cfg.run_id: 100.0}, resumed=resumed_rounds([cfg], store))
    clock = FakeClock()
    job = JobProgress([cfg], store, {cfg.run_id: 100.0}, enabled=False, clock=clock)
    assert job.eta.seconds() == pytest.approx(58.0) == plan.seconds(workers=1)
    job.bar = type("Bar", (), {"n": 0, "total": 100.0, "set_postfix_str": lambda *a, **k: None,
                               "refresh": lambda *a: None})()
    clock.now += 10.0
    _resumed(store, cfg, 52)
    job.poll([cfg])
    assert job.eta.seconds() == pytest.approx(48.0)


def test_two_jobs_sharing_a_run_each_time_their_own_part(tmp_path):
    """Job A started the run from scratch, job B joined after A's 30th round (B waits on A's run): at A's 60th
    round, 60 s after A's start and 30 s after B's, each job's pace is 1 s a round, 40 s left for both."""
    from fssl_core.executors.progress import JobProgress
    store, cfg = RunStore(tmp_path), RunConfig(seed=1, rounds=100)
    clock = FakeClock()
    a = JobProgress([cfg], store, {cfg.run_id: 100.0}, enabled=False, clock=clock)
    clock.now += 30.0
    _resumed(store, cfg, 30)
    b = JobProgress([cfg], store, {cfg.run_id: 100.0}, enabled=False, clock=clock)
    clock.now += 30.0
    _resumed(store, cfg, 60)
    for job in (a, b):
        job.bar = type("Bar", (), {"n": 0, "total": 100.0, "set_postfix_str": lambda *x, **k: None,
                                   "refresh": lambda *x: None})()
        job.poll([cfg])
        assert job.eta.seconds() == pytest.approx(40.0)


def test_a_reruns_plan_names_the_runs_it_resumes_and_from_which_round(tmp_path):
    from fssl_core.job.plan import resumed_rounds
    store = RunStore(tmp_path)
    cut, fresh = RunConfig(seed=1, rounds=10), RunConfig(seed=2, rounds=10)
    store.dir(cut).mkdir(parents=True)
    (store.dir(cut) / "metrics.jsonl").write_text("".join(f'{{"round": {r}}}\n' for r in range(1, 5)))
    job = JobPlan([], [cut, fresh], [], estimate={cut.run_id: 10.0, fresh.run_id: 10.0},
                  estimate_source={cut.run_id: "guess", fresh.run_id: "guess"},
                  resumed=resumed_rounds([cut, fresh], store))
    assert job.resumed == {cut.run_id: 4}
    assert "[plan] 1 of them resume from their checkpoints: fedavg mnist iid seed 1 after round 4" in job.describe(1)
