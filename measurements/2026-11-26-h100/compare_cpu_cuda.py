"""Train a committed CPU run's config on CUDA (exact FP32) and compare it round by round with the
committed CPU records: accuracy per round, final and best, and the seconds. Usage:
python3 .gpu/compare_cpu_cuda.py RUN_ID OUT_JSON (FSSL_RUNS: where the CUDA run goes)."""
import json
import os
import sys
from pathlib import Path

from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from fssl_core.engine.trainer import train

run_id, out = sys.argv[1], Path(sys.argv[2])
committed = Path("runs") / run_id
cpu = RunConfig.from_dict(json.loads((committed / "config.json").read_text()))
assert cpu.run_id == run_id, (cpu.run_id, run_id)
cpu_rows = [json.loads(line) for line in (committed / "metrics.jsonl").read_text().splitlines() if line.strip()]
cuda = cpu.replace(device=os.environ.get("CMP_DEVICE", "cuda"))
result = train(cuda, RunStore(), progress=False)
pairs = [(a["round"], a["accuracy"], b["accuracy"]) for a, b in zip(cpu_rows, result.metrics)
         if "accuracy" in a and "accuracy" in b]
report = {
    "cpu_run": run_id, "cuda_run": cuda.run_id, "rounds": len(pairs),
    "cpu_final": cpu_rows[-1].get("accuracy"), "cuda_final": result.summary["accuracy"],
    "max_abs_accuracy_difference": max(abs(a - b) for _, a, b in pairs),
    "mean_abs_accuracy_difference_last10": sum(abs(a - b) for _, a, b in pairs[-10:]) / min(10, len(pairs)),
    "first_round_differing": next((r for r, a, b in pairs if a != b), None),
    "per_round": pairs,
    "cpu_seconds": sum(r["seconds"] for r in cpu_rows), "cuda_seconds": result.summary["seconds"],
}
out.write_text(json.dumps(report, indent=1))
print(json.dumps({k: v for k, v in report.items() if k != "per_round"}))
