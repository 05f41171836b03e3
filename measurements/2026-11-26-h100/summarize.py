"""The tables of this folder's README, from its records: `python measurements/2026-11-26-h100/summarize.py`."""
import json
from pathlib import Path

HERE = Path(__file__).parent
NAMES = {("supervised_server", "uniform"): "SL (server alone)", ("fedmatch", "uniform"): "FedMatch",
         ("fedmix", "fedloss"): "FedMix-FedLoss", ("fedmix", "fedfreq"): "FedMix-FedFreq"}
ROUNDS = (5, 10, 20, 30, 40, 50, 60, 80, 100, 120, 140, 150)


def fig8_table() -> str:
    lines = ["| run | method | rounds logged | accuracy % at rounds " + "/".join(map(str, ROUNDS)) +
             " | best % (round) | final % | seconds (4 sharing the GPU) | MB both ways | pseudo-labels: mask rate / masked and correct, rounds 10, 50, 100, 140 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run in sorted((HERE / "fig8").iterdir()):
        cfg = json.loads((run / "config.json").read_text())
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
        acc = {r["round"]: r["accuracy"] for r in rows if "accuracy" in r}
        best = max(acc, key=acc.get)
        finished = (run / "result.json").exists()
        mb = sum(r["upload_bytes"] + r["download_bytes"] for r in rows) / 1e6
        masks = ", ".join(f"{rows[k - 1]['train_mask_rate']:.2f}/{rows[k - 1]['train_masked_correct_rate']:.2f}"
                          for k in (10, 50, 100, 140) if k <= len(rows) and "train_mask_rate" in rows[k - 1]) or "-"
        lines.append(f"| {run.name} | {NAMES[(cfg['algorithm'], cfg['client_weighting'])]} | {len(rows)} of "
                     f"{cfg['rounds']}{'' if finished else ' (unfinished)'} | "
                     + "/".join(f"{acc[k]:.1f}" if k in acc else "-" for k in ROUNDS)
                     + f" | {acc[best]:.2f} ({best}) | {acc[max(acc)]:.2f} | {sum(r['seconds'] for r in rows):.0f} | "
                       f"{mb:,.0f} | {masks} |")
    return "\n".join(lines)


def readme_tables() -> list[str]:
    """What README.md must show, as the records give it (tests/test_measurements.py)."""
    return [fig8_table()]


if __name__ == "__main__":
    print(fig8_table())
