"""The investigation runners outside the package (studies/): what each computes, on its smallest case, and every
command the measurements' pages give for them."""
import importlib
import importlib.util
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from fssl_core.config import ConfigError
from fssl_core.data.datasets import data_root
from fssl_core.engine.trainer import train
from fssl_core.papers.fedmix import cells as fedmix_cells
from fssl_core.profiles import PROFILES
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore

from .conftest import how_to_get

ROOT = Path(__file__).resolve().parents[1]
ARMS = ROOT / "measurements" / "2026-11-27-fedmix-arms"
requires_fashion_mnist = pytest.mark.skipif(
    not (data_root() / "FashionMNIST" / "raw" / "train-images-idx3-ubyte").exists(), reason=how_to_get("fashion_mnist"))
# a sliver of streaming Fashion-MNIST: the wiring of a FedMix study in seconds (other run ids)
SLIVER = ["--set", "resplit_train=1200", "--set", "resplit_test=200", "--set", "server_labeled=100"]


def test_the_set_option_types_each_field_and_refuses_bad_pairs_in_one_line():
    """train_fig8's, diagnose's and arms' --set key=value (the GPU hand-over of the received reading)."""
    from studies.options import parse_set
    assert parse_set(["fedmix_teacher=received", "rounds=3", "pseudo_label_threshold=0.5"]) == {
        "fedmix_teacher": "received", "rounds": 3, "pseudo_label_threshold": 0.5}
    for bad, says in (("rounds=x", "expected int"), ("bogus=1", "RunConfig field"), ("nokey", "key=value")):
        with pytest.raises(ConfigError, match=says):
            parse_set([bad])


@pytest.mark.parametrize("protocol,network,other", [("narrow", "resnet9_narrow", "resnet9_fedmatch_narrow"),
                                                     ("paper", "resnet9_fedmatch", "resnet9")])
def test_each_diagnostic_arm_is_the_default_with_one_change(protocol, network, other):
    from studies.fedmix.arms import PAPER_ROUNDS, arms
    configs = arms("cuda", protocol, "tf32")
    default = configs["C: FedMix-FedLoss (default)"].to_dict()
    changed = {arm: {k for k, v in cfg.to_dict().items() if default[k] != v} for arm, cfg in configs.items()}
    assert changed["B: passive clients (λ_1 = λ_2 = 0)"] == {"fedmix_lambda_1", "fedmix_lambda_2"}
    assert changed["D: ȳ from the received ω_t"] == {"fedmix_teacher"}
    e = next(arm for arm in configs if arm.startswith("E:"))
    assert changed[e] == {"model"} and (default["model"], configs[e].model) == (network, other)
    assert changed["F: tether λ_L1 = 10"] == {"fedmix_tether"}
    assert configs["A: SL"].algorithm == "supervised_server" and default["fedmix_log_parts"] is True
    assert len({cfg.run_id for cfg in configs.values()}) == 6
    if protocol == "paper":       # Fig. 8's cells as the paper profile plans them, cut to the first rounds
        cell = next(c for c in fedmix_cells.streaming_cells(PROFILES["paper"], "cuda", precision="tf32")
                    if c.method == "fedmix_fedloss").configs[0]
        assert configs["C: FedMix-FedLoss (default)"].replace(seed=1) == cell.replace(rounds=PAPER_ROUNDS, fedmix_log_parts=True)


def test_the_narrow_arms_at_the_reference_settings_are_fixed_before_their_runs():
    """narrow_reference: narrow's A-D with FedMatch's code's settings and nothing else changed, six seeds an arm;
    narrow's own arms keep their committed ids (measurements/2026-11-27-fedmix-arms)."""
    from studies.fedmix import arms
    narrow, reference = arms.arms("cpu", "narrow"), arms.arms("cpu", "narrow_reference")
    assert [a.split(":")[0] for a in reference] == ["A", "B", "C", "D"] and arms.REFERENCE_SEEDS == (1, 2, 3, 4, 5, 6)
    for arm, cfg in reference.items():
        assert cfg == narrow[arm].replace(**fedmix_cells.reference_code(cfg.algorithm))
    assert [c.run_id for c in arms.configs("cpu", "narrow", seeds=(1, 2, 3))["A: SL"]] == [
        "5c64266bff5b1bb4", "0c5474392df1471d", "10d883399f24f0b8"]


def test_an_arms_expectation_holds_only_where_the_claim_test_decides_it_in_the_expected_direction():
    from studies.fedmix.arms import expectations
    frame = pd.DataFrame([{"arm": f"{letter}: x", "last10": mean, "last10_std": std, "n": 3}
                          for letter, mean, std in (("A", 77.0, 0.5), ("B", 75.0, 0.4), ("C", 50.0, 1.0),
                                                    ("D", 60.0, 20.0), ("E", 55.0, 1.0))])
    rows = expectations(frame, "narrow").set_index("expectation")
    assert rows.expectation_holds.to_dict() == {"B below A": "yes", "C below B": "yes", "D above C": "undecided",
                                                "E above C": "yes"}            # F has no runs: no row
    assert rows.loc["D above C", "power"].startswith("undecided at n = 3 (detects ≥ ")
    assert expectations(frame, "paper").set_index("expectation").expectation_holds.to_dict() == {
        "B within 1.5 points of A": "undecided", "C below B": "yes", "D at or above C": "undecided", "E below C": "no"}


def test_the_arms_summary_of_the_committed_runs_is_the_committed_table(tmp_path):
    """The measurement's `summary` command, on a copy of its folder's runs: arms.csv and expectations.csv byte for
    byte as committed (every run found under its committed id, proved by the store before it is read)."""
    from studies.fedmix import arms
    shutil.copytree(ARMS / "runs", tmp_path / "runs")
    arms.main(["summary", str(tmp_path), "--seeds", "1,2,3,4,5,6"])
    for table in ("arms.csv", "expectations.csv"):
        assert (tmp_path / table).read_bytes() == (ARMS / table).read_bytes(), table


@requires_fashion_mnist
def test_train_fig8_trains_the_notebooks_runs_with_a_change():
    """The smallest case of the GPU hand-over: one method at smoke on a sliver, the --set change in its config."""
    from studies.fedmix import train_fig8
    train_fig8.main(["--profile", "smoke", "--device", "cpu", "--methods", "fedmix_fedloss",
                     "--set", "fedmix_teacher=received", *SLIVER])
    cell = fedmix_cells.streaming_cells(PROFILES["smoke"], "cpu", methods=["fedmix_fedloss"])[0]
    cfg = cell.configs[0].replace(fedmix_teacher="received", resplit_train=1200, resplit_test=200, server_labeled=100)
    assert RunStore().load(cfg) is not None


@requires_fashion_mnist
def test_diagnose_writes_a_row_per_client_step(tmp_path):
    from studies.fedmix import diagnose
    out = tmp_path / "diagnose.csv"
    assert diagnose.main(["--profile", "smoke", "--rounds", "1", "--set", "model=cnn_mnist", *SLIVER,
                          "--out", str(out)]) == 0
    rows = pd.read_csv(out)
    assert len(rows) and set(rows["round"]) == {1}
    assert {"psi_acc", "omega_acc", "psi_omega_bn_acc", "bn_mean_drift", "top_share"} <= set(rows.columns)
    assert rows.psi_acc.between(0, 1).all() and (rows.bn_mean_drift == 0).all()     # cnn_mnist has no BatchNorm


def test_anchor_geometry_on_a_hand_computed_case():
    """Two classes with orthogonal anchors: a sample on class 0's anchor scores (1, 0), one halfway scores
    (1/√2, 1/√2), above t = 0.6 for both classes; the class means are unit vectors, orthogonal to each other."""
    from studies.fedanchor.anchor_geometry import geometry, scores_of
    anchors = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    labels = torch.tensor([0, 0, 1, 1])
    z = torch.tensor([[1.0, 0.0], [1.0, 1.0], [-1.0, -1.0]])
    scores = scores_of(z, anchors, labels, 2)
    torch.testing.assert_close(scores, torch.tensor([[1.0, 0.0], [0.5 ** 0.5] * 2, [-(0.5 ** 0.5)] * 2]))
    g = geometry(scores, torch.tensor([0, 1, 0]), anchors, labels, 2, 0.6)
    assert g["selected_share"] == pytest.approx(2 / 3) and g["second_above_share"] == pytest.approx(1 / 3)
    assert g["kept_accuracy"] == pytest.approx(0.5)        # the halfway sample's tie goes to class 0, it is a 1
    assert g["between_class_cosine"] == pytest.approx(0.0) and g["within_class_cosine"] == pytest.approx(1.0)
    assert g["class_mean_norm"] == pytest.approx(1.0)


@requires_fashion_mnist
def test_anchor_geometry_replays_the_stored_run_round_by_round(tmp_path):
    from studies.fedanchor.anchor_geometry import anchor_geometry, write_geometry
    cfg = RunConfig(algorithm="fedanchor", dataset="fashion_mnist", partition="server_lda", dirichlet_alpha=1000.0,
                    server_labeled=100, server_balanced=True, projection_dim=16, pseudo_label_threshold=0.6,
                    clients=20, clients_per_round=2, rounds=2, local_epochs=1, batch_size=10, pretrain_epochs=1,
                    lr=0.03, weight_decay=5e-4, client_weighting="samples", server_step="head_by_head", seed=3)
    store = RunStore(tmp_path / "runs")
    stored = train(cfg, store)
    # the command's files, from anchor_geometry, which raises unless every round's accuracy is the run's
    frame = write_geometry({"fedanchor, iid": cfg}, tmp_path / "out", store)
    assert frame["round"].tolist() == [1, 2] and frame.run_id.tolist() == [cfg.run_id] * 2
    assert frame.accuracy.tolist() == [m["accuracy"] for m in stored.metrics]
    assert ((frame.selected_share >= frame.second_above_share) & frame.selected_share.between(0, 1)).all()
    assert pd.read_csv(tmp_path / "out" / "anchor_geometry.csv").accuracy.tolist() == frame.accuracy.tolist()
    assert (tmp_path / "out" / "anchor_geometry.png").stat().st_size > 0
    with pytest.raises(ValueError, match="not a finished run"):
        anchor_geometry(cfg.replace(seed=4), store, progress=None)


def test_the_published_geometry_replays_the_committed_runs():
    """The command's runs are the ones its measurement names (their records committed under runs/)."""
    from studies.fedanchor.anchor_geometry import published_runs
    ids = {name: cfg.run_id for name, cfg in published_runs().items()}
    assert ids == {"fedanchor, iid": "8859f210c8bd4b4e", "fedanchor, dir0.1": "571831c7037955cf",
                   "fedanchor_all_parameters, iid": "5f15e084c446b8d1",
                   "fedanchor_all_parameters, dir0.1": "0b279c9aeaeb50dc"}
    assert all((ROOT / "runs" / run_id / "result.json").exists() for run_id in ids.values())


# every page that gives a command: the READMEs and docs, the measurements' notes and scripts, the notebooks
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "fssl_core").rglob("*.md")),
         *sorted((ROOT / "measurements").rglob("*.md")), *sorted((ROOT / "measurements").rglob("*.sh")),
         *sorted((ROOT / "studies").rglob("*.md")), *sorted((ROOT / "notebooks").glob("*.py"))]
MODULE_COMMAND = re.compile(r"python3? -m ((?:fssl_core|studies)(?:\.\w+)+)")
COMMANDS = sorted({m for page in PAGES for m in MODULE_COMMAND.findall(page.read_text())})
STUDIES = sorted(f"studies.{'.'.join(p.relative_to(ROOT / 'studies').with_suffix('').parts)}"
                 for p in (ROOT / "studies").rglob("*.py") if p.name not in ("__init__.py", "options.py"))


def test_the_pages_give_every_study_a_command():
    assert STUDIES and set(STUDIES) <= set(COMMANDS), sorted(set(STUDIES) - set(COMMANDS))


@pytest.mark.parametrize("module", COMMANDS)
def test_every_python_m_command_of_a_page_names_a_module_that_exists(module):
    assert importlib.util.find_spec(module) is not None, f"`python -m {module}`: no such module"


@pytest.mark.parametrize("module", STUDIES)
def test_each_study_answers_help(module, capsys):
    with pytest.raises(SystemExit) as done:
        importlib.import_module(module).main(["--help"])
    assert done.value.code == 0 and f"python -m {module}" in capsys.readouterr().out
