"""The tables of this folder's README, and the figures gpu_measurements.json holds for this GPU, from its
records: `python measurements/2026-11-26-h100-b/summarize.py`."""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def _report(call: int) -> dict:
    return json.loads((HERE / f"gpu_check_call{call}.json").read_text())


def bench_table() -> str:
    """Call 2's bench step (every case; the machine otherwise idle), in `bench`'s own table."""
    from fssl_core.perf.bench import markdown
    return markdown(_report(2)["steps"]["bench"]["rows"])


def first_bench_table() -> str:
    """Call 1's bench step: the two MNIST cases it measured before the CIFAR case raised."""
    from fssl_core.perf.bench import markdown
    return markdown(_report(1)["steps"]["bench"]["rows"])


def throughput_table() -> str:
    rows = _report(1)["steps"]["throughput"]["rows"]
    one = rows[0]["runs_per_hour_at_50_rounds"]
    lines = ["| runs at once | rounds each (timed: the 2nd) | s a round, each run | start-up s | runs per hour at 50 rounds | × one at a time |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['concurrency']} | {r['rounds_each']} | {r['round_s']:.2f} | {r['startup_s']:.1f} | "
              f"{r['runs_per_hour_at_50_rounds']:.1f} | {r['runs_per_hour_at_50_rounds'] / one:.2f} |" for r in rows]
    return "\n".join(lines)


def cohort_table() -> str:
    lines = ["| algorithm | settings | max abs(sequential − cohort) | pass (atol 2e-6, rtol 1e-5) | max abs(sequential − sequential again) |",
             "|---|---|---|---|---|"]
    for r in _report(1)["steps"]["cohort"]["rows"]:
        repeat = "-" if r["sequential_repeat_diff"] is None else f"{r['sequential_repeat_diff']:.1e}"
        lines.append(f"| {r['algorithm']} | {r['settings']} | {r['max_abs_diff']:.1e} | {'yes' if r['pass'] else 'no'} | {repeat} |")
    return "\n".join(lines)


def seed_spread() -> list[float]:
    """Final accuracies of the committed CPU runs of the compared configuration at every seed."""
    base = json.loads((ROOT / "runs" / _comparison()["cpu_run"] / "config.json").read_text())
    finals = []
    for run in sorted((ROOT / "runs").iterdir()):
        if (run / "result.json").exists():
            cfg = json.loads((run / "config.json").read_text())
            if {k: v for k, v in cfg.items() if k != "seed"} == {k: v for k, v in base.items() if k != "seed"}:
                finals.append(json.loads((run / "result.json").read_text())["accuracy"])
    return finals


def _comparison() -> dict:
    return json.loads((HERE / "cpu_vs_cuda.json").read_text())


def comparison_table() -> str:
    c = _comparison()
    finals = seed_spread()
    return "\n".join([
        "| run | device | final accuracy % | s for 50 rounds |", "|---|---|---|---|",
        f"| {c['cpu_run']} | CPU (this project's machine, 1 thread, torch 2.14.1) | {c['cpu_final']:.2f} | {c['cpu_seconds']:.0f} |",
        f"| {c['cuda_run']} | H100, exact FP32 (torch 2.11.0) | {c['cuda_final']:.2f} | {c['cuda_seconds']:.0f} |",
        f"| (seed spread) | CPU, seeds of the same configuration (n = {len(finals)}) | "
        f"{statistics.mean(finals):.2f} ± {statistics.stdev(finals):.2f} | - |",
        "",
        f"Rounds compared: {c['rounds']}; the first that differs: {c['first_round_differing']}; largest "
        f"difference at any round {c['max_abs_accuracy_difference']:.2f} points; mean over the last 10 rounds "
        f"{c['mean_abs_accuracy_difference_last10']:.3f} points."])


def sensitivity_table() -> str:
    """sensitivity.py's rows (a CPU): the sequential trainer from a start nudged by a relative 1e-7."""
    report = json.loads((HERE / "sensitivity.json").read_text())
    cuda = {(r["algorithm"], r["settings"]): r["max_abs_diff"] for r in _report(1)["steps"]["cohort"]["rows"]}
    lines = [f"| algorithm | settings | CPU: max abs difference after 2 rounds, start × (1 + {report['relative_nudge']:g}) | "
             "CPU, RandAugment's CUDA path: max abs(sequential − cohort) | H100: max abs(sequential − cohort) |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['algorithm']} | {r['settings']} | {r['max_abs_diff_after_2_rounds']:.1e} | "
              f"{r['whole_batch_augment_cohort_diff']:.1e} | {cuda[(r['algorithm'], r['settings'])]:.1e} |"
              for r in report["rows"]]
    return "\n".join(lines)


def gpu_measurements() -> dict:
    """gpu_measurements.json's entry for this GPU: runs per hour from call 1's throughput step, the bench
    rows from call 2's (every case; call 1's bench stopped at the CIFAR case)."""
    from fssl_core.perf.gpu_check import measurements
    first, second = measurements(_report(1)), measurements(_report(2))
    (name, figures), = first.items()
    return {name: {**figures, "bench": second[name]["bench"], "source": f"measurements/{HERE.name}"}}


def readme_tables() -> list[str]:
    """What README.md must show, as the records give it (tests/test_measurements.py)."""
    return [bench_table(), first_bench_table(), throughput_table(), cohort_table(), sensitivity_table(),
            comparison_table()]


def project_readme_tables() -> list[str]:
    """What the project's README shows of this folder (its bench section's CUDA rows)."""
    return [bench_table(), throughput_table()]


if __name__ == "__main__":
    for table in readme_tables():
        print(table, end="\n\n")
    print(json.dumps(gpu_measurements(), indent=2))
