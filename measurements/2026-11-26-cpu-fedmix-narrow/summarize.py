"""The narrow copy's table (README.md), from the run records in runs/ beside this file: each arm's final and best
test accuracy (mean ± std over seeds, n), FedMix's pseudo-labels over its FedMix rounds (7-14: the kept share,
and the share of kept ones that are right), and claim_test's verdicts on "received above trained" and
"FedMix above SL" (Welch's t, 95%, at least 3 seeds a side).

    python measurements/2026-11-26-cpu-fedmix-narrow/summarize.py [--write]   # --write: into README.md
"""
import importlib.util
import statistics
import sys
from pathlib import Path

from fssl_core.report.claim_test import Side, claim_test
from fssl_core.store import RunStore

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("narrow_train", HERE / "train.py")
train = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train)


def side(name, values):
    return Side(name, statistics.mean(values), statistics.stdev(values) if len(values) > 1 else float("nan"),
                len(values))


def fmt(s: Side) -> str:
    return f"{s.mean:.2f} ± {s.std:.2f} (n={s.n})" if s.n > 1 else f"{s.mean:.2f} (n=1)"


def diagnose_table() -> str:
    """Per round, the mean over its client steps of ȳ's accuracy from each model, the kept share (max ȳ ≥ τ);
    then, over rounds 5-12 by step, the trained ψ's accuracy and its running means' drift from ω_t's."""
    import pandas as pd
    d = pd.read_csv(HERE / "diagnose.csv")
    lines = ["| round | ψ as trained | ω_t received | ψ with ω_t's statistics | kept share, ψ / ω_t |", "|---|---|---|---|---|"]
    for r, g in d.groupby("round"):
        lines.append(f"| {r} | {g.psi_acc.mean():.3f} | {g.omega_acc.mean():.3f} | {g.psi_omega_bn_acc.mean():.3f} | "
                     f"{g.psi_kept.mean():.3f} / {g.omega_kept.mean():.3f} |")
    late = d[d["round"].between(5, 12)].groupby("step")
    steps = [0, 4, 8, int(d.step.max())]
    lines += ["", "Rounds 5-12, by the step of a client's round (later steps: only the clients with more data):", "",
              "| step | " + " | ".join(str(k) for k in steps) + " |", "|---|" + "---|" * len(steps),
              "| ψ as trained | " + " | ".join(f"{late.psi_acc.mean()[k]:.3f}" for k in steps) + " |",
              "| ω_t received | " + " | ".join(f"{late.omega_acc.mean()[k]:.3f}" for k in steps) + " |",
              "| running-mean drift 2\\|ψ−ω\\|/(\\|ψ\\|+\\|ω\\|) | "
              + " | ".join(f"{late.bn_mean_drift.mean()[k]:.3f}" for k in steps) + " |"]
    return "\n".join(lines)


def _fill(text: str, marker: str, block: str) -> str:
    head, _, rest = text.partition(f"<!-- {marker} -->")
    _, _, tail = rest.partition(f"<!-- /{marker} -->")
    return f"{head}<!-- {marker} -->\n{block}\n<!-- /{marker} -->{tail}"


def table() -> str:
    store = RunStore(HERE / "runs")
    lines = ["| arm | final accuracy % | best accuracy % | FedMix rounds 7-14: kept share / kept and right share | run ids |",
             "|---|---|---|---|---|"]
    finals, bests = {}, {}
    for arm, configs in train.configs().items():
        done = [r for r in (store.load(c) for c in configs) if r is not None]
        if not done:
            lines.append(f"| {arm} | not run | | | |")
            continue
        finals[arm] = side(arm, [r.summary["accuracy"] for r in done])
        bests[arm] = side(arm, [r.summary["best_accuracy"] for r in done])
        rows = [m for r in done for m in r.metrics if m["round"] > 6 and "train_mask_rate" in m]
        kept = statistics.mean(m["train_mask_rate"] for m in rows) if rows else None
        right = statistics.mean(m["train_masked_correct_rate"] for m in rows) if rows else None
        pl = f"{kept:.3f} / {right:.3f} ({right / kept:.0%} of the kept right)" if rows else "-"
        lines.append(f"| {arm} | {fmt(finals[arm])} | {fmt(bests[arm])} | {pl} | "
                     f"{' '.join(r.config.run_id for r in done)} |")
    arms = list(train.ARMS)
    verdicts = []
    if arms[0] in finals and arms[1] in finals:
        verdicts.append(f"- received above trained, final accuracy: "
                        f"{claim_test(finals[arms[1]], [finals[arms[0]]])} "
                        f"({finals[arms[1]].mean - finals[arms[0]].mean:+.2f} points)")
    for arm in arms[:2]:
        if arm in finals and "SL" in finals:
            verdicts.append(f"- {arm} above SL, final accuracy: {claim_test(finals[arm], [finals['SL']])} "
                            f"({finals[arm].mean - finals['SL'].mean:+.2f} points)")
    return "\n".join(lines + [""] + verdicts)


def readme_tables() -> list[str]:
    """What README.md must show, as the records give it (tests/test_measurements.py)."""
    return [diagnose_table(), table()]


if __name__ == "__main__":
    blocks = {"diagnose": diagnose_table(), "table": table()}
    print("\n\n".join(blocks.values()))
    if "--write" in sys.argv:
        readme = HERE / "README.md"
        text = readme.read_text()
        for marker, block in blocks.items():
            text = _fill(text, marker, block)
        readme.write_text(text)
