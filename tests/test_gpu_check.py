"""The GPU check, run here on the CPU at size tiny: each check passes where the CPU tests say it must,
the report holds what was measured after every step, a step past its budget is cut and still reported,
a bad parameter is one line. The tiny check takes about 40 s of CPU time, its spawned processes
included (45 s wall on this project's 2-core machine under a load of 3.5): most of it is their start-up."""
import json
import time

import pytest

from fssl_core import cli
from fssl_core.perf import gpu_check
from fssl_core.perf.gpu_check_runs import KILL_AFTER

from .conftest import requires_mnist


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    status = cli.main(["gpu-check", "device=cpu", f"out={out}"])
    return status, out, json.loads((out / "gpu_check.json").read_text()), (out / "gpu_check.md").read_text()


@requires_mnist
def test_the_tiny_check_passes_and_reports_every_step(tiny, capsys):
    status, out, report, md = tiny
    assert status == 0 and report["finished"] and report["size"] == "tiny" and report["budget_s"] == 360
    steps = report["steps"]
    assert list(steps) == list(gpu_check.SHARES)
    assert all(s["status"] == "done" and not s["cut"] for s in steps.values()), {n: s["note"] for n, s in steps.items()}
    # each step's budget is its share plus what the steps before it left unspent
    assert report["shares"] == {"environment": 18.0, "cohort": 54.0, "resume": 54.0, "bench": 126.0, "throughput": 108.0}
    assert steps["cohort"]["budget_s"] > 54.0
    env = steps["environment"]["data"]
    assert env["device"] == "cpu" and env["driver_version"] is None and env["torch"] and env["cpu_count"] >= 1
    assert {"tf32_matmul", "tf32_cudnn", "cudnn_deterministic", "deterministic_algorithms", "date_utc"} <= set(env)
    assert "## environment" in md and f"| torch | {env['torch']} |" in md and "| cohort | done |" in md


@requires_mnist
def test_every_cohort_configuration_passes_the_cpu_tolerance(tiny):
    rows = tiny[2]["steps"]["cohort"]["rows"]
    assert [r["algorithm"] for r in rows] == [gpu_check.COHORT_CASES[i][0] for i in gpu_check.TINY_COHORT]
    assert all(r["pass"] and r["max_abs_diff"] < 2e-6 for r in rows), rows


@requires_mnist
def test_a_run_killed_after_its_checkpoint_resumes_identical(tiny):
    data = tiny[2]["steps"]["resume"]["data"]
    assert data["exercised"] and data["writer_exit"] == -9 and data["rows_at_kill"] >= KILL_AFTER
    assert data["resumed_after_round"] >= KILL_AFTER         # from the checkpoint, not from round 1
    assert data["identical"] and data["differs"] == [] and data["uninterrupted_repeat_identical"]


@requires_mnist
def test_bench_and_throughput_rows_are_recorded(tiny):
    steps = tiny[2]["steps"]
    (row,) = steps["bench"]["rows"]
    assert row["case"] == "mnist_fedavg" and row["seq_steps"] == "4 of 900" and row["cohort_s"] > 0
    assert "(4 of 900 steps, scaled)" in tiny[3]
    rows = steps["throughput"]["rows"]
    assert [r["concurrency"] for r in rows] == [1, 2]
    for r in rows:
        assert r["finished"] == r["runs"] == r["concurrency"] and r["rounds_done"] == 2 * r["concurrency"]
        assert r["rounds_per_hour"] > 0 and r["runs_per_hour_at_50_rounds"] > 0 and r["round_s"] > 0
    # the figures engine/gpu_defaults.py reads, in gpu_measurements.json's shape
    figures = tiny[2]["gpu_measurements"]["cpu"]
    assert figures["runs_per_hour"] == {str(r["concurrency"]): r["runs_per_hour_at_50_rounds"] for r in rows}
    assert figures["bench"] == {"mnist_fedavg": {"sequential": row["seq_s"], "cohort": row["cohort_s"]}}


def test_a_step_past_its_budget_is_cut_and_the_report_still_written(tmp_path, monkeypatch, capsys):
    # each configuration takes 1 s of a 2.5 s budget: the second starts with 1.5 s left, the third would
    # need 1 s of the 0.5 s left
    def slow(algorithm, role, extra, device):
        time.sleep(1.0)
        return {"algorithm": algorithm, "role": role, "settings": "-", "max_abs_diff": 0.0, "worst_tensor": "w",
                "pass": True}
    monkeypatch.setattr(gpu_check, "cohort_difference", slow)
    report = gpu_check.run_check(device="cpu", size="full", out=tmp_path, budget=2.5, steps=("cohort",))
    cohort = json.loads((tmp_path / "gpu_check.json").read_text())["steps"]["cohort"]
    assert report["finished"] and cohort["status"] == "cut" and cohort["cut"] and len(cohort["rows"]) == 2
    assert cohort["note"] == "not run: " + ", ".join(a for a, _, _ in gpu_check.COHORT_CASES[2:])
    assert "| cohort | cut | 2.5 |" in (tmp_path / "gpu_check.md").read_text()
    assert "cohort 2/8 fedsiam_d" in capsys.readouterr().out        # progress: step, i/n, elapsed, budget


@pytest.mark.parametrize("argument, message", [
    ("device=tpu", "gpu-check device='tpu': must be one of cuda, cpu"),
    ("size=huge", "gpu-check size='huge': must be one of full, tiny"),
    ("budget=soon", "gpu-check budget='soon': must be a number of seconds above 0"),
    ("budget=0", "gpu-check budget='0': must be a number of seconds above 0"),
    ("colour=red", "gpu-check: unknown parameter 'colour' (colour=red): allowed are device, size, out, budget, steps"),
    ("tiny", "gpu-check: 'tiny': expected key=value with key one of device, size, out, budget, steps"),
    ("steps=cohort,speed", "gpu-check steps='cohort,speed': must be distinct names among environment, cohort, resume, "
                           "bench, throughput, comma-separated"),
])
def test_a_bad_parameter_is_one_line_naming_it(argument, message, capsys, tmp_path):
    assert cli.main(["gpu-check", argument, f"out={tmp_path / 'never'}"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {message}\n"
    assert not (tmp_path / "never").exists()


@requires_mnist
def test_a_cohort_difference_beyond_tolerance_repeats_the_sequential_trainer(monkeypatch):
    # forced out of tolerance: the sequential trainer runs again; on the CPU it repeats itself exactly,
    # which on a GPU would clear the device's kernels and point at the trainers
    monkeypatch.setattr(gpu_check.torch, "allclose", lambda *a, **k: False)
    algorithm, role, extra = gpu_check.COHORT_CASES[0]
    row = gpu_check.cohort_difference(algorithm, role, extra, "cpu")
    assert row["pass"] is False and row["sequential_repeat_diff"] == 0.0
    monkeypatch.undo()
    assert gpu_check.cohort_difference(algorithm, role, extra, "cpu")["sequential_repeat_diff"] is None
