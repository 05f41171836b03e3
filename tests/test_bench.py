"""The benchmark's bookkeeping: interleaved rounds, the printed table and the README block."""
import pytest

from fssl_core import bench


def test_rounds_are_interleaved_and_the_warm_up_round_is_not_counted(monkeypatch):
    clock = iter(range(0, 10_000, 1))
    calls = []
    cost = {"loop": 5, "cohort": 1}

    def trainer(name):
        def run(r):
            calls.append((name, r))
            for _ in range(cost[name] * (10 if r == 1 else 1)):     # round 1 is slow: warm-up
                next(clock)
        return run

    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(clock))
    seconds = bench.interleaved_seconds({"loop": trainer("loop"), "cohort": trainer("cohort")}, 3, bench.torch.device("cpu"))
    assert calls == [("loop", 1), ("cohort", 1), ("loop", 2), ("cohort", 2), ("loop", 3), ("cohort", 3),
                     ("loop", 4), ("cohort", 4)]
    # each timed round reads the clock once more than the trainer ticks it
    assert seconds == {"loop": 6, "cohort": 2}


def test_the_table_and_the_readme_block(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- bench:start -->\nold\n<!-- bench:end -->\n<!-- results:start -->\nkeep\n<!-- results:end -->\n")
    rows = [{"case": "mnist_fedavg", "device_name": "cpu", "threads": 1, "loop_s": 2.0, "seq_s": 1.2, "cohort_s": 0.6,
             "cohort_vs_seq": 2.0, "cohort_vs_loop": 3.33, "round_gflop": 7.79, "cohort_tflops": 0.013},
            {"case": "cifar_fedsiam_d", "device_name": "NVIDIA H100 80GB HBM3", "threads": 1, "seq_s": 3.0,
             "cohort_s": 0.5, "cohort_vs_seq": 6.0, "round_gflop": 500.0, "cohort_tflops": 1.0, "peak_tflops": 67.0,
             "cohort_vs_flop_floor": 67.0}]
    table = bench.markdown(rows)
    assert "| mnist_fedavg | cpu (1 threads) | 2.0 | 1.2 | 0.6 | 2.0× | 3.33× | 7.79 | 0.013 | n/a |" in table
    assert "| cifar_fedsiam_d | NVIDIA H100 80GB HBM3 (1 threads) | n/a | 3.0 | 0.5 | 6.0× | n/a | 500.0 | 1.0 | 67.0× (peak 67.0) |" in table
    from fssl_core.report import replace_readme_block
    assert replace_readme_block(bench.README_START, bench.README_END, bench.readme_block(rows[:1], "cpu"))
    text = readme.read_text()
    assert "old" not in text and "keep" in text and "| mnist_fedavg |" in text
    assert bench.device_peak_tflops("NVIDIA H100 80GB HBM3") == 67.0 and bench.device_peak_tflops("cpu") is None


def test_bad_options_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown option"):
        bench.main({"device": "cpu", "round": "3"})
    with pytest.raises(ValueError, match="readme='maybe'"):
        bench.main({"readme": "maybe"})
