"""The diagnostic that splits FedMix's gap to SL (its own supervised part) into arms, each FedMix-FedLoss with one
change but A: A SL; B passive clients (λ_1 = λ_2 = 0: ψ^k = ω_t, so Eq. 9 is ω_{t+1} = ω_t + β(σ_{t+1} − ω_t));
C the default; D ȳ from the received ω_t; E the other network; F the conference tether λ_L1 = 10. Every FedMix arm
logs ψ_{t+1}'s, σ_{t+1}'s and ω_{t+1}'s test accuracy a round; each arm's final accuracy and mean over the last 10
rounds (not best-of-run) go against A by the claim test. Exploratory: no paper's protocol.

    python -m studies.fedmix.arms train OUT [--protocol paper --device cuda --precision tf32]
    python -m studies.fedmix.arms summary OUT   # OUT/arms.csv from the records in OUT/runs

narrow (a CPU's): streaming Fashion-MNIST on ResNet-9 at 1/8 width with BatchNorm (E: BN-free), 20 rounds, the
first 6 SL warm-up, τ = 0.5 (measurements/2026-11-26-cpu-fedmix-narrow's protocol). Expectations, committed before
any of its runs existed: B below A by the lag of a step shrunk by β (so "SL is FedMix's ceiling" holds only
asymptotically); C below B (clients whose kept pseudo-labels are 56% right pull ω down); D above C (81% right
there); E nearer B than C if BatchNorm's statistics cause most of C's shortfall; F between C and B.

paper (a GPU's; measurements/fedmix-arms-paper-prepared): Fig. 8's cells as the paper profile plans them (FedMatch's
BN-free ResNet-9, τ = 0.8, no warm-up; E: the BatchNorm ResNet-9) for the first PAPER_ROUNDS rounds. Expectations,
committed before any of its runs exist: B within 1.5 points of A over the last 10 rounds (SL plateaus within about
10 rounds here, so β's lag has closed); C below B; E (BatchNorm) below C (the pseudo-label symptoms seen so far
exist only with BatchNorm); D at or above C; F between C and B.
narrow_reference (a CPU's): narrow's A-D at FedMatch's code's settings; its expectations at REFERENCE_SEEDS.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from fssl_core.config import DEVICES, ConfigError
from fssl_core.papers.fedmix.cells import STREAMING, paper_config, reference_code
from fssl_core.report.claim_test import Comparison, Side, holm
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from studies.options import parse_set

NARROW = dict(model="resnet9_narrow", rounds=20, pseudo_label_threshold=0.5, trainer="sequential")
WARMUP = {"fedmix_warmup_rounds": 6, "fedmix_log_parts": True}
PAPER_ROUNDS = 60    # the first 60 of Fig. 8's 150 rounds: 18 ResNet-9 runs in a GPU's lease
SEEDS = (1, 2, 3)
LAST = 10        # rounds averaged at the end
PROTOCOLS = ("narrow", "narrow_reference", "paper")
# narrow_reference: narrow's arms A-D at FedMatch's code's settings (cells.REFERENCE_CODE: weight decay 0, inputs
# ÷ 255, every weight × 1.2 at the start, one start for every seed), six seeds an arm, fixed before any of its runs.
# The question: does the reference code's start move C toward B, i.e. C here above narrow's C
# (measurements/2026-11-27-fedmix-arms: 58.45 ± 13.92 over the last 10 rounds, n = 6)? Expectations, committed
# before any of its runs exist: B below A, C below B, D above C, as on narrow; and C not above narrow's C, since on
# this BatchNorm network every convolution's scale is normalised away and the × 1.2 reaches the logits only through
# the last layer (a 1.2× sharper start), which τ = 0.5 on the sharpened average barely changes.
REFERENCE_SEEDS = (1, 2, 3, 4, 5, 6)


def arms(device: str = "cpu", protocol: str = "narrow", precision: str = "fp32") -> dict[str, RunConfig]:
    """Arm label -> its config at seed 1. narrow: the CPU's copy (ResNet-9 at 1/8 width with BatchNorm, E the
    BN-free one); paper: Fig. 8's cells (FedMatch's BN-free ResNet-9, E the BatchNorm one) for PAPER_ROUNDS."""
    if protocol not in PROTOCOLS:
        raise ConfigError(f"protocol={protocol!r}: must be one of {', '.join(PROTOCOLS)}")
    if protocol == "narrow_reference":     # narrow's A-D at FedMatch's code's settings
        narrow = arms(device, "narrow", precision)
        return {arm: cfg.replace(**reference_code(cfg.algorithm)) for arm, cfg in narrow.items()
                if arm.split(":")[0] in ("A", "B", "C", "D")}
    if protocol == "narrow":
        fedmix = paper_config("fedmix_fedloss", device, precision, **STREAMING).replace(**NARROW, **WARMUP)
        sl = paper_config("supervised_server", device, precision, **STREAMING, **NARROW)    # τ dropped: SL reads none
        other_network = ("E: BN-free network", "resnet9_fedmatch_narrow")
    else:
        # Fig. 8's cells at the paper protocol follow FedMatch's code's settings (cells.REFERENCE_CODE)
        fedmix = paper_config("fedmix_fedloss", device, precision, **STREAMING).replace(
            rounds=PAPER_ROUNDS, fedmix_log_parts=True, **reference_code("fedmix_fedloss"))
        sl = paper_config("supervised_server", device, precision, **STREAMING).replace(
            rounds=PAPER_ROUNDS, **reference_code("supervised_server"))
        other_network = ("E: BatchNorm network", "resnet9")
    return {
        "A: SL": sl,
        "B: passive clients (λ_1 = λ_2 = 0)": fedmix.replace(fedmix_lambda_1=0.0, fedmix_lambda_2=0.0),
        "C: FedMix-FedLoss (default)": fedmix,
        "D: ȳ from the received ω_t": fedmix.replace(fedmix_teacher="received"),
        other_network[0]: fedmix.replace(model=other_network[1]),
        "F: tether λ_L1 = 10": fedmix.replace(fedmix_tether=10.0),
    }


def configs(device: str = "cpu", protocol: str = "narrow", precision: str = "fp32", seeds=SEEDS,
            changes: dict | None = None) -> dict[str, list[RunConfig]]:
    """Arm label -> its configs, one a seed; `changes` last (a CPU's wiring check of the GPU's script)."""
    return {arm: [cfg.replace(seed=s, **(changes or {})) for s in seeds]
            for arm, cfg in arms(device, protocol, precision).items()}


def summary(store: RunStore, arm_configs: dict[str, list[RunConfig]] | None = None) -> pd.DataFrame:
    """One row per arm over its finished runs (n of them; an arm with none is left out): final and last-10
    accuracy of ω (mean, std, n), the last-10 means of ψ and σ where logged, and the verdict of "this arm above A"
    read as the arm's last-10 minus A's. `arm_configs`: the arms' runs (`configs`), by default the narrow copy's."""
    per_arm = {}
    for arm, cfgs in (arm_configs or configs()).items():
        finished = [(c, r) for c, r in ((c, store.load(c)) for c in cfgs) if r is not None]
        if finished:
            per_arm[arm] = ([c for c, _ in finished], [r.metrics for _, r in finished])
    if not per_arm:
        return pd.DataFrame()
    rows, reference = [], None
    for arm, (cfgs, metrics) in per_arm.items():
        final = pd.Series([m[-1]["accuracy"] for m in metrics])
        last = pd.Series([_mean_last(m, "accuracy") for m in metrics])
        row = {"arm": arm, "final": final.mean(), "final_std": final.std(), "last10": last.mean(),
               "last10_std": last.std(), "n": len(metrics),
               "psi_last10": _mean(_mean_last(m, "accuracy_psi") for m in metrics),
               "sigma_last10": _mean(_mean_last(m, "accuracy_sigma") for m in metrics),
               "run_ids": " ".join(c.run_id for c in cfgs)}
        side = Side(arm, row["last10"], row["last10_std"], row["n"])
        if reference is None:
            reference, row["vs_A"] = side, ""
        else:
            verdict = Comparison(side, (reference,)).verdict(1.0)
            power = verdict.power_line(row["n"])
            row["vs_A"] = f"{row['last10'] - reference.mean:+.2f} points, {verdict.word}" + (f" {power}" if power else "")
        rows.append(row)
    return pd.DataFrame(rows)


# The expectations of the docstring as claims "first above second" on the last-10 means, each with the direction
# expected (narrow: B below A, C below B, D above C, E above C (nearer B, which is above both), F above C and below
# B; paper: the same, but B ≈ A within 1.5 points and E below C)
EXPECTED = {
    "narrow": (("B", "A", "below"), ("C", "B", "below"), ("D", "C", "above"), ("E", "C", "above"),
               ("F", "C", "above"), ("F", "B", "below")),
    "paper": (("B", "A", "parity"), ("C", "B", "below"), ("D", "C", "at or above"), ("E", "C", "below"),
              ("F", "C", "above"), ("F", "B", "below")),
    "narrow_reference": (("B", "A", "below"), ("C", "B", "below"), ("D", "C", "above")),
}
PARITY_POINTS = 1.5


def expectations(frame: pd.DataFrame, protocol: str = "narrow") -> pd.DataFrame:
    """Each expectation of `protocol` whose two arms are in `frame` (summary's rows): the difference of the last-10
    means, the claim test's word on "first above second" (parity: within PARITY_POINTS), its power line where
    undecided, and whether the expectation holds ("yes", "no", or "undecided")."""
    sides = {row.arm.split(":")[0]: Side(row.arm, row.last10, row.last10_std, int(row.n)) for row in frame.itertuples()}
    rows = []
    for first, second, expected in EXPECTED[protocol]:
        if first not in sides or second not in sides:
            continue
        parity = expected == "parity"
        verdict = Comparison(sides[first], (sides[second],), "parity" if parity else "above").verdict(PARITY_POINTS)
        if verdict.word == "holds":
            holds = "yes" if expected in ("above", "at or above", "parity") else "no"
        elif verdict.word == "refuted":
            holds = "yes" if expected in ("below",) else "no"
        else:
            holds = "undecided"
        relation = f"within {PARITY_POINTS:g} points of" if parity else expected
        # the expectation's own p: TOST's for parity, else the two-sided p of a difference from 0
        p = verdict.p if parity else verdict.interval.p(0.0)
        rows.append({"expectation": f"{first} {relation} {second}",
                     "difference": round(sides[first].mean - sides[second].mean, 2), "claim": verdict.word,
                     "power": verdict.power_line(min(sides[first].n, sides[second].n)), "expectation_holds": holds,
                     "p": p})
    frame = pd.DataFrame(rows, columns=["expectation", "difference", "claim", "power", "expectation_holds", "p"])
    # Holm's step-down over the expectations tested together: a "yes" it does not keep is "undecided (Holm)"
    kept = holm(list(frame.p))
    frame["holm"] = [h if h != "yes" else ("yes" if k else "undecided (Holm)")
                     for h, k in zip(frame.expectation_holds, kept)]
    frame["p"] = frame.p.round(4)
    return frame


def _mean_last(metrics: list[dict], key: str) -> float:
    values = [m[key] for m in metrics if key in m][-LAST:]
    return sum(values) / len(values) if values else math.nan


def _mean(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.fedmix.arms", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["train", "summary"])
    parser.add_argument("out", type=Path, help="the folder: its runs/ and arms.csv")
    parser.add_argument("--protocol", default="narrow", choices=PROTOCOLS)
    parser.add_argument("--device", default="cpu", choices=list(DEVICES))
    parser.add_argument("--precision", default="fp32", choices=["fp32", "tf32"])
    parser.add_argument("--seeds", default=None, help="comma-separated (default: SEEDS; narrow_reference: its fixed "
                                                      "REFERENCE_SEEDS)")
    parser.add_argument("--arms", default=None, help="train only these arms' runs, by letter (e.g. C,D); "
                                                     "the summary reads every arm's runs at SEEDS and beyond")
    parser.add_argument("--workers", type=int, default=None, help="runs side by side (default: the executor's)")
    parser.add_argument("--set", action="append", default=[], metavar="key=value",
                        help="a RunConfig change for every run (a CPU's wiring check: other run ids)")
    args = parser.parse_args(argv)
    try:
        default = REFERENCE_SEEDS if args.protocol == "narrow_reference" else SEEDS
        seeds = list(default) if args.seeds is None else [int(s) for s in args.seeds.split(",") if s]
        arm_configs = configs(args.device, args.protocol, args.precision, seeds, parse_set(args.set))
    except (ConfigError, ValueError) as err:
        parser.error(str(err))
    store = RunStore(args.out / "runs")
    if args.command == "train":
        from fssl_core.executors import run_all
        letters = None if args.arms is None else set(args.arms.split(","))
        known = {arm.split(":")[0] for arm in arm_configs}
        if letters is not None and not letters <= known:
            parser.error(f"--arms {args.arms}: must be letters among {','.join(sorted(known))}")
        run_all(list({c.run_id: c for arm, cs in arm_configs.items() if letters is None or arm.split(":")[0] in letters
                      for c in cs}.values()), store=store, workers=args.workers)
    # the summary reads every seed trained so far, SEEDS and those given
    arm_configs = configs(args.device, args.protocol, args.precision, sorted(set(SEEDS) | set(seeds)),
                          parse_set(args.set))
    frame = summary(store, arm_configs)
    if len(frame):
        from fssl_core.store.files import atomic_write_text
        atomic_write_text(args.out / "arms.csv", frame.to_csv(index=False))
        print(frame.drop(columns="run_ids").to_string(index=False))
        expected = expectations(frame, args.protocol)
        atomic_write_text(args.out / "expectations.csv", expected.to_csv(index=False))
        print(expected.to_string(index=False))


if __name__ == "__main__":
    main()
