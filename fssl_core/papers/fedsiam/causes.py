"""Why a FedSiam cell lands far from the paper: the likely reasons, from reading the authors' code
(DELTA_REASONS); the one reading that may measure a far cell's cause (PRE_REGISTERED, `cause_reading`,
fixed in commit RULE_COMMIT) and what it measured (`measured_cause`: a cause only from MIN_SEEDS runs of
it); whether those runs came after the rule (`prospective`, decided by git) or existed before it (post
hoc); every other reading shown as exploratory, their code's own reruns as provenance; over published
results (`explain_published`, which the README's summary counts)."""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import torch

from ...algorithms.base import mixed_plan
from ...algorithms.fedsiam import ema_alpha
from ...data.datasets import shape_of
from ...learning.batches import DataView
from ...paths import project_root
from ...report.claim_test import MIN_SEEDS, Interval, Side, welch
from ...run_config import RunConfig, defaults
from ...store import RunStore
from ...report.tables import WITHIN_POINTS, Cell, best_protocol, is_claim, large_deltas
from .cells import TABLE6_METHODS, TABLE6_SETTINGS

# Likely reasons for a cell more than 1.5 points from the paper, each (methods or None for any,
# direction of the gap, profiles it applies at or None for any, reason, and where the labels are:
# 'client' (Table 5's settings), 'server' (Table 6's) or None for both). Found by reading the authors'
# code (github.com/zewei-long/fedsiam-pytorch, labels-at-client and labels-at-server) and by our
# measurements; `explain_large_deltas` lists every reason that holds beside each such cell.
_ANY = None


class DeltaReason(NamedTuple):
    methods: tuple[str, ...] | None
    side: str
    profiles: tuple[str, ...] | None
    reason: str
    labels_at: str | None = None


DELTA_REASONS = tuple(DeltaReason(*r) for r in (
    (("fedavg", "fedavg_plus", "fedsem"), "below", ("quick", "smoke"),
     "quick runs 1 local epoch instead of Table 2's 5 and these methods learn from the labeled samples only "
     "(FedSem's first phase too), so they take a fifth of the paper's supervised steps; the headline section "
     "runs the paper's 5 epochs"),
    (("fedsem",), "below", ("quick", "smoke"),
     "FedSem labels every unlabeled sample once, with the global model of the last phase-1 round; quick's one "
     "epoch leaves that model weak (and, under non-IID, swinging from round to round), so phase 2 trains on "
     "many wrong labels (its train_pseudo_label_accuracy per round is in the run's metrics)"),
    (("fedsiam_pi", "fedsiam_mt"), "below", ("quick", "smoke"),
     "quick runs 1 local epoch instead of Table 2's 5; the notebook runs Non-IID-I at γ = 0.10 at the paper's "
     "protocol too (at_paper_protocol), which measures how much of the gap this accounts for", "client"),
    (("fedavg", "fedavg_plus", "fedsem"), "above", _ANY,
     "the authors train these baselines with momentum 0.5 and no weight decay (LocalUpdate_fedavg), ours with "
     "Table 2's 0.9 and 1e-4; the notebook's `authors' optimiser` rows run theirs"),
    (("fedsem",), "above", _ANY,
     "the authors' FedSem (main_fedsem.py) trains their MNIST network, with its dropout, on unaugmented digits "
     "(ToTensor and Normalize only) in both phases, so its phase-1 model, which labels every unlabeled sample, is "
     "weaker than ours; `at_authors_network` runs that computation (their optimiser, their network, no "
     "augmentation) in the Non-IID-II columns, where their optimiser alone left it far from the paper", "client"),
    (("fedfixmatch", "fedmatch"), "above", _ANY,
     "the authors' FedFixMatch and FedMatch never train on their unlabeled loss (their code rebuilds the "
     "strong-view logits as a detached Variable; see algorithms/fedfixmatch.py): both rows train the labeled "
     "CE alone, summed over the labeled samples and divided by the whole batch of 10, on views that flip digits "
     "horizontally (a mirrored digit is another glyph); ours train FixMatch's and FedMatch's losses, on digits "
     "never flipped. The notebook's `at_authors_fixmatch` column runs the authors' computation (AUTHORS_FIXMATCH)", "client"),
    (("fedmatch",), "above", _ANY,
     "the authors' FedMatch is one network without FedMatch's σ/ψ decomposition, its helpers the two local "
     "models of the round with the best test accuracy; ours is FedMatch as its paper defines it", "client"),
    (_ANY, "below", _ANY,
     "the paper's values are test-selected: the authors' code keeps, over all rounds, the global model with the "
     "lowest test loss (their validation set is the test set, main_*.py with models/test.py) and reports its "
     "accuracy; ours is the last round's. The `test_selected` column gives ours selected the same way", "client"),
    (("fedsiam_pi", "fedsiam_mt", "fedsiam_d", "fedsiam_nosiam", "fedsiam_d_mse", "fedsiam_d_kl"), "above", _ANY,
     "the authors' MNIST network adds dropout to Table 1's (Dropout2d 0.5 after conv2, 0.5 after fc1, their "
     "models/Nets.py); Table 5's `at_authors_network` runs our siamese rows on it and `at_authors_code` their code "
     "itself, both nearer the paper than Table 1's network. Their MNIST siamese scripts also train on unaugmented "
     "inputs (main_fedsiam_pi/_mt/_d.py: ToTensor and Normalize only; MT's flip-and-crop transform is defined but "
     "unused), dropout their only perturbation, where ours draws the paper's two perturbed inputs x+η, x+η' as two "
     "weak views (2-pixel translation, contrast); and their target's EMA decay α^k runs on the client's local "
     "epochs (models/Update.py), about 0.97 on a fifth pick, where ours counts SGD steps (Eq. 9) and reaches "
     "α_max: their target nearly follows the online net, and their Non-IID accuracy swings from round to round; "
     "`at_authors_siamese` runs our siamese rows with all three (their network, unaugmented inputs, epoch clock)",
     "client"),
    (("fedsiam_d_kl",), "above", _ANY,
     "not explained by a known difference: the authors scale the KL as we do (summed over classes, mean "
     "over the batch); our FedSiam-D rows sit above the paper's with either loss"),
    (TABLE6_METHODS, "above", _ANY,
     "the authors' labels-at-server clients never train on their own data: their client loop trains on the "
     "server's last labeled batch (fedsiam-*-main.py, TABLE6_SERVER_ALONE), so their Table 6 is the server's "
     "supervised training on γ|D| labels, with their dropout network, flipped digits and batch 10 at momentum "
     "0.5; the `server_alone` column runs that", "server"),
))
UNEXPLAINED = "no known difference explains it (measured_cause: what the pre-registered reading measured)"


def likely_reasons(method: str, delta: float, profile: str, setting: str = "iid") -> list[str]:
    """Every reason of DELTA_REASONS that holds for a cell of `method` in `setting` whose reproduced
    value is `delta` points from the paper's, measured at `profile`."""
    direction = "above" if delta > 0 else "below"
    labels_at = "server" if setting in TABLE6_SETTINGS else "client"
    return [r.reason for r in DELTA_REASONS
            if (r.methods is None or method in r.methods) and r.side == direction
            and (r.profiles is None or profile in r.profiles) and r.labels_at in (None, labels_at)]


def as_test_selected(results: pd.DataFrame) -> pd.DataFrame:
    """The test-selected rows of `results` as its accuracy: the model the FedSiam authors' code keeps
    and reports (the round of lowest test loss), to set beside the paper's values."""
    return results[results.metric == "accuracy_test_selected"].assign(metric="accuracy")


# --- the one cause reading per far cell ------------------------------------------------------------
# The paper's values are what the authors' code computes and keeps: their whole computation (their
# network, optimiser, inputs and clocks, their Fed(Fix)Match), test-selected (the round of lowest test
# loss). So the one reading that may explain a cell far from the paper is that computation, run by us at
# the cell's coordinates and read test-selected. Per method, the side reading (as `measured_beside` names
# it) that runs the whole of it; a cell whose method has none, or whose column it was not run in, has no
# pre-registered reading. Not whole, hence never a cause: `at_authors_optimiser` (their optimiser alone),
# `at_authors_fixmatch` (their Fed(Fix)Match on Table 1's network), `at_authors_network` of a siamese row
# (our siamese computation on their network), any last-round reading, ours test-selected, the paper's
# protocol beside a reduced row. Those stay as exploratory columns. Choosing among readings after seeing
# which lands nearest "explained" about a quarter of far cells by chance.
# The rule was fixed in RULE_COMMIT, after many of its readings' runs had been published: a cause whose
# runs were first committed after it is prospective, the others post hoc (`prospective`). Our seeds'
# spread is no cause: a cell beyond WITHIN_POINTS whose interval holds the paper is undecided, not explained.
PRE_REGISTERED = "the authors' whole computation as their paper reports it, test-selected"
RULE_COMMIT = "0f784cdb4bdb5d4c1ce2e2192370132d2a2750d8"    # the commit that fixed PRE_REGISTERED
SIAMESE_ROWS = ("fedsiam_pi", "fedsiam_mt", "fedsiam_d", "fedsiam_nosiam", "fedsiam_d_mse", "fedsiam_d_kl")
WHOLE_COMPUTATION = {
    **{m: "at_authors_siamese_test_selected" for m in SIAMESE_ROWS},     # their network, raw inputs, epoch clock
    # their optimiser and network (FedSem unaugmented too); their Fed(Fix)Match on their network
    **{m: "at_authors_network_test_selected" for m in ("fedavg", "fedsem", "fedfixmatch", "fedmatch")},
}
# Table 6 (labels at the server): their clients never train, so their whole computation is the server alone
SERVER_WHOLE_COMPUTATION = "server_alone_test_selected"
AUTHORS_CODE = "at_authors_code"     # their code itself, rerun, test-selected: provenance, never a cause
NONE_MEASURED = "none measured"      # how measured_cause starts for a far cell without a pre-registered cause
TOO_FEW_RUNS = "not counted"         # how it starts for a reading within WITHIN_POINTS from under MIN_SEEDS runs
EXPLORATORY = "exploratory: "        # the prefix of every other reading's column


def cause_reading(method: str, setting: str) -> str | None:
    """The pre-registered reading's column for a cell of `method` in `setting` (None: none names it)."""
    return SERVER_WHOLE_COMPUTATION if setting in TABLE6_SETTINGS else WHOLE_COMPUTATION.get(method)


def seed_interval(mean: float, std: float, n: float, paper: float) -> Interval | None:
    """The 95% interval of ours − the paper by claim_test's Welch t, the paper's value a point (its seeds'
    spread is not printed; with std 0 the test is the one-sample t at n − 1 degrees of freedom); None
    under claim_test.MIN_SEEDS seeds, where the spread is too poorly known to say anything."""
    if pd.isna(n) or n < MIN_SEEDS or pd.isna(std):
        return None
    return welch(Side("ours", mean, std, int(n)), Side("the paper", paper, 0.0, MIN_SEEDS))


def explain_large_deltas(results: pd.DataFrame, points: float = WITHIN_POINTS,
                         at_paper_protocol: pd.DataFrame | None = None,
                         measured: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The cells more than `points` from the paper, each with its likely reasons (or UNEXPLAINED), its
    pre-registered reading (`cause_reading`; column `pre-registered reading`, its source beside it) and
    `measured_cause` from it alone (`measured_cause`); their code's own reruns as provenance
    (`authors' code`, `provenance`), never a cause; every other reading in a column prefixed
    `exploratory: `, those within `points` listed in `exploratory within`.

    `at_paper_protocol`: results of the same cells run at the paper's own protocol (e.g. a notebook's
    headline), exploratory. `measured`: column name -> results of the same cells computed another way
    (e.g. the authors' optimiser), as `measured_beside` names them."""
    table = large_deltas(results, points)
    reasons = [" · ".join(likely_reasons(r.method, r.delta, r.profile, r.setting)) or UNEXPLAINED
               for r in table.itertuples()]
    columns = ["setting", "labeled", "dataset", "method", "metric", "paper_value", "reproduced_value",
               "reproduced_std", "n_runs", "delta", "profile"]
    key = ["setting", "labeled", "dataset", "method", "metric"]
    others = {"test_selected": as_test_selected(results)}
    if at_paper_protocol is not None and not at_paper_protocol.empty:
        others["at_paper_protocol"] = at_paper_protocol
    others.update(measured or {})
    table = table[columns].assign(likely_reason=reasons)
    for name, frame in others.items():       # each value, its runs' spread and the runs themselves
        frame = frame[frame.metric == "accuracy"].dropna(subset=["reproduced_value"])
        spread = [c for c in ("reproduced_std", "n_runs", "run_ids") if c in frame.columns]
        table = table.merge(frame[key + ["reproduced_value", *spread]].drop_duplicates(key).rename(
            columns={"reproduced_value": name, "reproduced_std": f"{name} std", "n_runs": f"{name} n",
                     "run_ids": f"{name} runs"}), on=key, how="left")
    rows = table.to_dict("records")
    sources = [cause_reading(r["method"], r["setting"]) for r in rows]
    table["pre-registered reading"] = [r.get(s, math.nan) if s else math.nan for r, s in zip(rows, sources)]
    table["pre-registered source"] = [s if s in others else "not run" if s else "none named" for s in sources]
    table["measured_cause"] = [measured_cause(r, s, points) for r, s in zip(rows, sources)]
    table["reading runs"] = [str(r.get(f"{s} runs", "") or "") if s else "" for r, s in zip(rows, sources)]
    table["authors' code"] = table.get(AUTHORS_CODE, math.nan)
    table["provenance"] = [provenance(r, points) for r in rows]
    exploratory = [name for name in others if name != AUTHORS_CODE]
    for name in exploratory:                 # a reading is exploratory where it is not the cell's pre-registered one
        table[EXPLORATORY + name] = [math.nan if name == s else r[name] for r, s in zip(rows, sources)]
    table["exploratory within"] = [exploratory_within(r, [n for n in exploratory if n != s], points)
                                   for r, s in zip(rows, sources)]
    return table[columns + ["pre-registered reading", "pre-registered source", "measured_cause", "reading runs",
                            "authors' code",
                            "provenance", *(EXPLORATORY + n for n in exploratory), "exploratory within",
                            "likely_reason"]]


def measured_cause(row: dict, reading: str | None, points: float = WITHIN_POINTS) -> str:
    """The far cell's cause under the pre-registered rule: its one reading (`reading`, the column
    `cause_reading` names), from at least MIN_SEEDS runs, within `points` of the paper. A reading within
    `points` from fewer runs is "not counted" (one run is one draw of its seed spread); else "none
    measured", saying what the reading gave. No other reading is looked at (a cause picked as the nearest
    of many is chosen after the fact), and our seeds' spread is none: a far cell whose interval holds the
    paper is a cell the seeds cannot tell from the paper, not one explained."""
    paper = row["paper_value"]
    value = row.get(reading, math.nan) if reading else math.nan
    if not pd.isna(value) and abs(value - paper) <= points:
        runs = row.get(f"{reading} n", math.nan)
        said = f"{reading} {value:.2f} ({value - paper:+.2f} from the paper)"
        if pd.isna(runs) or runs < MIN_SEEDS:
            over = "an unknown number of runs" if pd.isna(runs) else f"{int(runs)} run{'s' if runs != 1 else ''}"
            return f"{TOO_FEW_RUNS}: {said} over {over}, under {MIN_SEEDS}"
        return f"{PRE_REGISTERED}: {said} over {int(runs)} runs"
    if not reading:
        return f"{NONE_MEASURED}; no pre-registered reading for {row['method']}"
    if pd.isna(value):
        return f"{NONE_MEASURED}; {reading} not run here"
    return f"{NONE_MEASURED}; {reading} {value:.2f} ({value - paper:+.2f} from the paper)"


def is_cause(measured: str) -> bool:
    """Whether a `measured_cause` text is a cause under the pre-registered rule."""
    return measured.startswith(PRE_REGISTERED)


def first_commits(run_ids: set[str], root=None) -> dict[str, str] | None:
    """The commit that first added each run's result.json (run id -> full hash), by `git log` over the
    project's history; None where git or the history is not there (an installed package). Ids never
    committed are left out."""
    root = root or project_root()
    try:
        out = subprocess.run(["git", "log", "--reverse", "--diff-filter=A", "--format=@%H", "--name-only", "--",
                              "runs/*/result.json"], cwd=root, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    first, commit = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            commit = line[1:]
        elif line.startswith("runs/"):
            run = line.split("/")[1]
            if run in run_ids and run not in first:
                first[run] = commit
    return first


def commits_after(commit: str, root=None) -> set[str] | None:
    """Every commit of HEAD's history that comes after `commit` (None without git or that commit)."""
    try:
        out = subprocess.run(["git", "rev-list", f"{commit}..HEAD"], cwd=root or project_root(), capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.split())


def computation_key(config: dict) -> str:
    """What a run computes, whatever its seed, random streams or revisions: its config.json less `seed` and every
    `*revision*` field, with the fields a config of its time did not write filled by RunConfig's defaults (so a
    config written before a field existed, e.g. `precision`, keys as one written after). "The same method, cell
    and protocol": a run of it under any id, at any seed, is the same computation."""
    full = {**defaults(), **config}
    return json.dumps({k: v for k, v in full.items() if k != "seed" and "revision" not in k}, sort_keys=True,
                      default=str)


def configs_committed_by(commit: str, root=None) -> list[dict] | None:
    """Every runs/*/config.json ever added in `commit`'s history (up to and with it), as committed; None without git."""
    root = root or project_root()
    try:
        log = subprocess.run(["git", "log", commit, "--diff-filter=A", "--format=@%H", "--name-only", "--",
                              "runs/*/config.json"], cwd=root, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    wanted, current = [], None
    for line in log.splitlines():
        if line.startswith("@"):
            current = line[1:]
        elif line.startswith("runs/"):
            wanted.append(f"{current}:{line}")
    blobs = subprocess.run(["git", "cat-file", "--batch"], cwd=root, input=("\n".join(wanted) + "\n").encode(),
                           capture_output=True, check=True).stdout
    configs, pos = [], 0
    for _ in wanted:
        end = blobs.index(b"\n", pos)
        header = blobs[pos:end].split()
        if header[-1] == b"missing":
            pos = end + 1
            continue
        size = int(header[2])
        configs.append(json.loads(blobs[end + 1:end + 1 + size]))
        pos = end + 1 + size + 1
    return configs


def prospective(run_ids: list[list[str]], rule_commit: str = RULE_COMMIT, root=None) -> list[bool | None]:
    """Per cause, whether its reading was never seen before `rule_commit`: every run of it first committed after
    the rule AND no run of the same computation (computation_key: any id, any seed, any streams or revisions)
    committed up to the rule. A reading retrained under new ids (the server's streams changed, 807076f) after its
    old runs and their published rows had shown the fit is post hoc, replicated. False where any run existed
    before or was never committed (a run not yet in git cannot show when it was made); None without git history.
    The results rows and commit messages of the rule's time name the runs they report, so a reading reported
    before the rule has its runs among those configs."""
    after = commits_after(rule_commit, root)
    first = first_commits({r for ids in run_ids for r in ids}, root) if after is not None else None
    earlier = configs_committed_by(rule_commit, root) if first is not None else None
    if after is None or first is None or earlier is None:
        return [None] * len(run_ids)
    seen = {computation_key(c) for c in earlier}
    root_path = Path(root) if root else None
    return [bool(ids) and all(first.get(r) in after for r in ids)
            and not any(_key_of_run(r, root_path) in seen for r in ids) for ids in run_ids]


def _key_of_run(run_id: str, root: Path | None) -> str | None:
    path = (root or project_root()) / "runs" / run_id / "config.json"
    return computation_key(json.loads(path.read_text())) if path.exists() else None


def provenance(row: dict, points: float = WITHIN_POINTS) -> str:
    """Whether the authors' own code, rerun (AUTHORS_CODE, test-selected as they report), computes the
    printed value: within `points`, or from MIN_SEEDS runs the printed value inside its 95% interval.
    It says where the paper's number comes from, not why ours differs: never a cause."""
    code = row.get(AUTHORS_CODE, math.nan)
    if pd.isna(code):
        return ""
    paper, runs = row["paper_value"], row.get(f"{AUTHORS_CODE} n", math.nan)
    over = f"{int(runs)} run{'s' if runs != 1 else ''}" if not pd.isna(runs) else "its runs"
    interval = seed_interval(code, row.get(f"{AUTHORS_CODE} std"), runs, paper)
    computes = abs(code - paper) <= points or (interval is not None and interval.low <= 0.0 <= interval.high)
    verb = "computes the printed value" if computes else "does not compute the printed value"
    return f"their code {verb}: {code:.2f} over {over} ({code - paper:+.2f})"


def exploratory_within(row: dict, names: list[str], points: float = WITHIN_POINTS) -> str:
    """Every exploratory reading within `points` of the paper, in column order, labelled exploratory:
    shown for what a later pre-registration may test, never counted as a cause."""
    paper = row["paper_value"]
    near = [f"{name} {row[name]:.2f} ({row[name] - paper:+.2f})" for name in names
            if not pd.isna(row.get(name, math.nan)) and abs(row[name] - paper) <= points]
    return f"exploratory, not a cause: {', '.join(near)}" if near else ""


def measured_beside(frame: pd.DataFrame, table: str) -> dict[str, pd.DataFrame]:
    """The computations a notebook publishes beside `table`'s cells (its side tables `<table>_<name>`),
    as `explain_large_deltas`' measured columns, named as the notebooks name them: each authors'
    computation at its last round (`at_authors_<x>`) and test-selected (`at_authors_<x>_test_selected`),
    the authors' code test-selected as their code reports it (`at_authors_code`), any other side table
    by its name at its last round and test-selected (Table 6's `server_alone`, `server_alone_test_selected`).
    Claims and Table 6's server step measure no cell's cause."""
    sides = frame[frame.table.str.startswith(f"{table}_") & ~frame.table.isin([f"{table}_claims",
                                                                               f"{table}_server_step"])]
    measured, test_selected = {}, {}
    for side, part in sides.groupby("table", sort=True):
        name = side.removeprefix(f"{table}_")
        if name == "authors_code":
            continue
        name = f"at_{name}" if name.startswith("authors_") else name
        measured[name] = part
        if (part.metric == "accuracy_test_selected").any():
            test_selected[f"{name}_test_selected"] = as_test_selected(part)
    code = sides[sides.table == f"{table}_authors_code"]
    return {**measured, **test_selected, **({AUTHORS_CODE: as_test_selected(code)} if len(code) else {})}


def explain_published(frame: pd.DataFrame, points: float = WITHIN_POINTS, dated: bool = True) -> pd.DataFrame:
    """`explain_large_deltas` over published results (results/fedsiam_table*.csv, or the merged
    report): each table's cells at their best protocol, beside what its notebook published next to
    them (`measured_beside`); one row per cell beyond `points`, with its table, `cause_measured` (True
    only for a cause under the pre-registered rule, `measured_cause`), `reading_missed` (the reading run at
    least MIN_SEEDS times and still far), `prospective` (for a cell the reading was run on that often: its
    reading's runs all committed after RULE_COMMIT; None without git, or with `dated` False) and
    `exploratory_near` (an exploratory reading within `points`, shown apart). The README's summary counts them."""
    frame = frame[(frame.paper == "fedsiam") & ~is_claim(frame)]
    tables = [t for t in frame.table.unique() if "_" not in t]         # side tables are `<table>_<name>`
    explained = [explain_large_deltas(best_protocol(frame[frame.table == t]), points,
                                      measured=measured_beside(frame, t)).assign(table=t) for t in tables]
    if not explained:
        return pd.DataFrame(columns=["table", "setting", "labeled", "dataset", "method", "metric", "measured_cause",
                                     "cause_measured", "exploratory_near", "reading_missed", "prospective"])
    table = pd.concat(explained, ignore_index=True)
    caused = [is_cause(cause) for cause in table.measured_cause]
    # the prospective check: every far cell its reading was run on at least MIN_SEEDS times, hit (a cause) or
    # missed (still far), each dated by git against RULE_COMMIT
    tried = [len(str(ids).split()) >= MIN_SEEDS for ids in table["reading runs"]]
    reading_runs = [str(ids).split() if t else [] for ids, t in zip(table["reading runs"], tried)]
    when = prospective(reading_runs) if dated else [None] * len(caused)
    return table.assign(cause_measured=caused, exploratory_near=table["exploratory within"] != "",
                        reading_missed=[t and not c for t, c in zip(tried, caused)],
                        prospective=[w if t else None for w, t in zip(when, tried)])


def client_steps_per_round(cfg: RunConfig) -> int:
    """SGD steps of one local training of an IID client of `cfg` (|D|/K samples, γ of them labeled),
    from the plan FedSiam trains with."""
    n = shape_of(cfg.dataset).num_train // cfg.clients
    labeled = math.floor(cfg.labeled_ratio * n + 0.5)
    view = DataView(torch.empty(labeled), torch.empty(n - labeled))
    return mixed_plan(cfg, view).steps(view)


def alpha_reached(cells: list[Cell], store=None) -> pd.DataFrame:
    """Table 7's α_max rows as run: α^k at the end of a client's first pick and of its expected
    R_G·B/K picks (α^k counts the client's own SGD steps, algorithms/fedsiam.py), and, per run, the
    first other variant whose per-round accuracies are identical, i.e. the α_max rows the schedule
    cannot tell apart."""
    store = store or RunStore()
    rows, curves = [], {}
    for cell in cells:
        if not cell.setting.startswith("alpha_max=") or not cell.configs or cell.metric != "accuracy":
            continue
        cfg = cell.configs[0]
        result = store.load(cfg)
        curve = tuple(m.get("accuracy") for m in result.metrics) if result else None
        same = next((name for name, other in curves.items() if curve is not None and other == curve), "")
        curves[cell.setting] = curve
        steps = client_steps_per_round(cfg)
        picks = cfg.rounds * cfg.clients_per_round / cfg.clients
        rows.append({"dataset": cell.dataset, "setting": cell.setting, "alpha_max": cfg.ema_decay,
                     "steps_per_pick": steps,
                     "alpha_after_first_pick": round(ema_alpha(steps, cfg.ema_decay), 5),
                     "alpha_after_expected_picks": round(ema_alpha(round(picks * steps), cfg.ema_decay), 5),
                     "final_accuracy": result.accuracy if result else None, "same_curve_as": same})
    return pd.DataFrame(rows)

