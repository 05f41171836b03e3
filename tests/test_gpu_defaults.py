"""CUDA defaults read from committed measurements, with a fallback that says it is one (engine/gpu_defaults.py)."""
import json

import pytest

from fssl_core.engine import gpu_defaults

H100 = "NVIDIA H100 80GB HBM3"
FIGURES = {H100: {"date": "2026-11-26", "runs_per_hour": {"1": 60.0, "2": 110.0, "4": 150.0, "8": 140.0},
                  "bench": {"mnist_fedavg": {"sequential": 1.2, "cohort": 0.4},
                            "mnist_fedsiam_d": {"sequential": 2.0, "cohort": 1.0},
                            "cifar_fedavg": {"sequential": 0.5, "cohort": 1.0}}}}


@pytest.fixture
def measured(tmp_path, monkeypatch):
    path = tmp_path / "gpu_measurements.json"
    path.write_text(json.dumps(FIGURES))
    monkeypatch.setattr(gpu_defaults, "MEASUREMENTS", path)
    gpu_defaults._measured.cache_clear()
    yield
    gpu_defaults._measured.cache_clear()


def test_the_concurrency_with_the_most_runs_per_hour_is_the_default(measured):
    count, why = gpu_defaults.workers(H100)
    assert count == 4
    assert why.startswith(f"4 at a time: the most runs per hour measured on {H100} (2026-11-26: 1 at once 60/h")
    assert "more may do better" not in why


def test_a_best_at_the_largest_concurrency_measured_says_more_may_do_better(measured):
    gpu_defaults.MEASUREMENTS.write_text(json.dumps({H100: {**FIGURES[H100], "runs_per_hour": {"1": 22.0, "2": 41.0,
                                                                                             "16": 128.0}}}))
    gpu_defaults._measured.cache_clear()
    count, why = gpu_defaults.workers(H100)
    assert count == 16 and why.endswith("16 at once 128/h; the most runs at once measured: more may do better)")


def test_auto_takes_the_trainer_faster_in_the_median_bench_case(measured):
    # cohort 3.0x, 2.0x and 0.5x the sequential speed: median 2.0x
    assert gpu_defaults.cohort(H100) == (True, f"cohort: the cohort ran 2.00x the sequential trainer's speed on "
                                               f"{H100} (median of 3 bench cases, 2026-11-26)")


def test_a_gpu_never_measured_gets_fallbacks_that_say_so(measured):
    count, why = gpu_defaults.workers("NVIDIA A100")
    assert count == gpu_defaults.FALLBACK_WORKERS and "a fallback: NVIDIA A100 has no runs-per-hour" in why
    assert gpu_defaults.cohort("NVIDIA A100") == (True, "cohort, a fallback: NVIDIA A100 has no bench measurement "
                                                        "in gpu_measurements.json")


def test_the_committed_file_parses_and_every_entry_has_a_date():
    gpu_defaults._measured.cache_clear()
    for gpu, figures in json.loads(gpu_defaults.MEASUREMENTS.read_text()).items():
        assert figures["date"], gpu
