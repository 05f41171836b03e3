"""Bad input ends in one line naming the parameter, its value and what is allowed, with a documented exit
status (cli.py: 2 a refused input), never a traceback: the cases a user tried, as a table."""
from pathlib import Path

import pytest

from fssl_core import cli

from .conftest import requires_mnist

APP = str(Path(__file__).resolve().parents[1] / "flower-app")

# (argv, exit status, what the one line says)
CASES = [
    (["reproduce", "--profile", "paper", "--only", "fedsiam_table6", "--dry-run", "--param", 'datasets=["fashion_mnist"]'],
     2, "datasets: 'fashion_mnist' must be one of mnist, cifar10, svhn"),
    (["reproduce", "--profile", "paper", "--only", "fedsiam_table6", "--dry-run", "--param", 'datasets=["imagenet"]'],
     2, "datasets: 'imagenet' must be one of mnist, cifar10, svhn"),
    (["reproduce", "--profile", "paper", "--only", "fedsiam_table6", "--dry-run", "--param", 'datasets=["mnist\\u0000"]'],
     2, "datasets: 'mnist\\x00' must be one of mnist, cifar10, svhn"),
    (["reproduce", "--profile", "paper", "--only", "fedsiam_table5", "--dry-run", "--param", 'methods=["bogus"]'],
     2, "methods: 'bogus' must be one of fedavg, fedavg_plus"),
    (["bench", "cases=bogus"], 2, "bench: cases=bogus: must be all or among mnist_fedavg"),
    (["bench", "rounds=abc"], 2, "bench: rounds='abc': must be an integer >= 1"),
    (["bench", "cases=runs_per_hour", "batches=x"], 2, "bench: batches='x': must be run counts"),
    (["bench", "cases=runs_per_hour", "size=huge"], 2, "bench: size='huge': must be full or tiny"),
    (["bench", "cases=runs_per_hour", "mixes=4by16"], 2, "bench: mixes='4by16': must be processes x batch pairs"),
    (["fingerprint", "--cases", "bogus"], 2, "fingerprint: cases=bogus: must be among fedavg"),
    (["export", "mlflow", "--experiment", ""], 2, "export mlflow: --experiment '': empty"),
    (["run", "algorithm=fedmix", "partition=streaming_dirichlet", "stream_parts=10", "dataset=fashion_mnist",
      "rounds=2", "fedmix_warmup_rounds=1000000"], 2, "fedmix_warmup_rounds=1000000, rounds=2: a warm-up of every round"),
    (["partition", "clients=60000", "batch_size=1", "labeled_ratio=0.5"], 2,
     "labeled_ratio=0.5, clients=60000: a client's share of 1 sample(s)"),
    (["run", "algorithm=fedavg", "ema_decay=0.5"], 2,
     "RunConfig.ema_decay=0.5, algorithm='fedavg': fedavg does not read ema_decay (read by fedsiam_d"),
    (["reproduce", "--dry-run", "--track", "mlflow", "--track-uri", "http://127.0.0.1:9"], 2,
     "--track mlflow: --track-uri 'http://127.0.0.1:9': MLflow cannot use it (API request to http://127.0.0.1:9"),
    (["export", "mlflow", "--uri", "sqlite:////nonexistent-folder/m.db"], 2,
     "export mlflow: --uri 'sqlite:////nonexistent-folder/m.db': MLflow cannot use it (its folder /nonexistent-folder"),
    (["verify", "--sample", "-1"], 2, "verify: --sample -1: must be 0 or more runs"),
    (["verify", "--minutes", "nan"], 2, "verify: --minutes nan: must be within [0, 10000) minutes"),
    (["verify", "--sample", "2", "--minutes", "5"], 2, "verify: --sample and --minutes: give one"),
    (["run", "seed=" + "9" * 5000], 2, "RunConfig.seed=<5000 characters>: expected int of at most 4300 digits"),
    (["reproduce", "--until-decided", "--dry-run", "--profile", "paper", "--param", "seeds=[1]"], 2,
     "--until-decided: takes no --param, --only or --profile"),
    # the Flower app's command: checked before anything is submitted (no SuperLink needed)
    (["flower", APP, "--run-config", "rounds=3"], 2,
     "Flower run config: rounds: not a key of this app; it is 'num-server-rounds' here"),
    (["flower", APP, "--run-config", "num-server-rounds=0"], 2,
     "Flower run config: num-server-rounds=0: must be an integer within [1, 1000000]"),
    (["flower", APP, "--run-config", "fraction-train=0.15 clients=10"], 2,
     "Flower run config: fraction-train=0.15 with clients=10: must be within (0, 1] and a whole number"),
    (["run", "partition=flwr_datasets", "flwr_partitioner=Bogus()", "rounds=1"], 2,
     "flwr_partitioner='Bogus()': Bogus must be one of flwr_datasets.partitioner's"),
    (["run", "partition=flwr_datasets", "flwr_partitioner=DirichletPartitioner(partition_by='label', alpha=-1)",
      "rounds=1"], 2, "Flower Datasets refused it: Alpha values should be strictly greater than zero."),
]


def _run_cli(argv, capsys) -> tuple[int, list[str], str]:
    """The command's exit status, its `error:` lines and all it wrote to stderr."""
    try:
        got = cli.main(argv)
    except SystemExit as stop:
        got = stop.code
    err = capsys.readouterr().err
    return got, [text for text in err.splitlines() if text.startswith("error:")], err


@requires_mnist
@pytest.mark.parametrize("argv,status,line", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_is_one_line_and_a_documented_status(argv, status, line, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_RUNS", str(tmp_path / "runs"))
    got, said, err = _run_cli(argv, capsys)
    assert got == status, err
    assert len(said) == 1 and line in said[0], err
    assert "Traceback" not in err


def test_an_unusable_mlflow_uri_is_one_line(capsys, tmp_path):
    pytest.importorskip("mlflow")
    assert cli.main(["export", "mlflow", "--runs", str(tmp_path), "--uri", "bogus://x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: export mlflow: --uri 'bogus://x': MLflow cannot use it")


def test_a_project_root_without_notebooks_names_where_it_came_from(capsys, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", "/proc/nowhere")
    assert cli.main(["reproduce", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: reproduce: /proc/nowhere/notebooks does not exist") and "$FSSL_PROJECT='/proc/nowhere'" in err[-1]


def test_ctrl_c_at_any_moment_of_run_is_one_line_and_130(tmp_path):
    """SIGINT while torch still imports, and once the run trains: status 130 and no traceback either way."""
    import os
    import signal
    import subprocess
    import sys
    import time
    env = {**os.environ, "FSSL_RUNS": str(tmp_path)}
    for delay in (0.3, 6.0):
        # 400 rounds (~70 s at 0.17 s a round): a fast machine must still be training 6 s in
        process = subprocess.Popen([sys.executable, "-m", "fssl_core", "run", "rounds=400", "clients=10",
                                    "clients_per_round=2", "resplit_train=5000", "resplit_test=500", "--quiet"],
                                   env=env, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 130, err
        assert "Traceback" not in err and len([line for line in err.splitlines() if line.strip()]) <= 2, err


# configs that can only end at chance: refused up front, the reason in the line
AT_CHANCE = [
    ({"lr": "1e-45"}, "RunConfig.lr=1e-45: must be a finite number within [1e-7, 3.4e38]"),
    ({"labeled_ratio": "1e-300"}, "rounds to no labeled sample"),
    ({"algorithm": "supervised_server", "partition": "server_iid", "labeled_ratio": "0.01", "server_epochs": "0"}, "server_epochs=0, partition='server_iid'"),
    ({"algorithm": "fedmix", "partition": "server_dirichlet", "sharpen_temperature": "1e-6"},
     "sharpen_temperature=1e-06: must be a finite number within [0.01, 3.4e38]"),
    ({"algorithm": "fedanchor", "partition": "server_iid", "labeled_ratio": "0.01", "contrastive_temperature": "1e-6"},
     "contrastive_temperature=1e-06: must be a finite number within [0.01, 3.4e38]"),
]


@pytest.mark.parametrize("pairs,line", AT_CHANCE, ids=[next(iter(p)) + "=" + next(iter(p.values())) for p, _ in AT_CHANCE])
def test_a_config_that_can_only_end_at_chance_is_refused_up_front(pairs, line):
    from fssl_core.config import ConfigError
    from fssl_core.run_config import RunConfig
    with pytest.raises(ConfigError) as refused:
        RunConfig.from_strings(pairs)
    assert line in str(refused.value)


@pytest.mark.parametrize("given", [5, "mnist", {"mnist": 1}])
def test_a_notebook_parameter_of_the_wrong_shape_is_one_line(given):
    """papermill -y "datasets: 5" (or "datasets: mnist") reaches the cells as an int or a string."""
    from fssl_core.config import ConfigError
    from fssl_core.papers import fedsiam
    from fssl_core.profiles import get_profile
    with pytest.raises(ConfigError, match=r"^datasets=.*: must be a list of names among mnist, cifar10, svhn"):
        fedsiam.table6_cells(get_profile("smoke"), "cpu", datasets=given)


def test_numerically_equal_values_are_one_computation():
    """-0.0 and 0.0, 1 and 1.0 for a float field: one value in the record, one run id."""
    from fssl_core.run_config import RunConfig
    a, b, c = RunConfig(weight_decay=0.0), RunConfig(weight_decay=-0.0), RunConfig(lr=1, weight_decay=0)
    assert a.run_id == b.run_id and str(b.weight_decay) == "0.0"
    assert c.run_id == RunConfig(lr=1.0, weight_decay=0.0).run_id


def test_a_store_file_with_a_key_given_twice_is_damage(tmp_path):
    """A result.json with two "accuracy" keys says two things (json.loads keeps the last, other readers the
    first): it is damage, named, never served."""
    from fssl_core.store.files import Damage, read_json
    path = tmp_path / "result.json"
    path.write_text('{"accuracy": 91.0, "status": "ok", "accuracy": 99.0}')
    with pytest.raises(Damage, match="key 'accuracy' given twice"):
        read_json(path)


@pytest.mark.parametrize("name,value,line", [
    ("FSSL_BATCH", "abc", "FSSL_BATCH='abc': must be a whole number of runs a batch"),
    ("FSSL_BATCH", "0", "FSSL_BATCH='0': must be a whole number of runs a batch"),
    ("FSSL_WORKERS", "-2", "FSSL_WORKERS='-2': must be a whole number of worker processes"),
    ("FSSL_OFFLINE", "banana", "FSSL_OFFLINE='banana': must be 1, true or yes (offline) or 0, false, no or empty"),
    ("OMP_NUM_THREADS", "x", "OMP_NUM_THREADS='x': must be a whole number of threads"),
])
@pytest.mark.parametrize("argv", [["reproduce", "--profile", "smoke", "--only", "fedsiam_table7", "--dry-run"],
                                  ["reproduce", "--until-decided", "--dry-run"]])
def test_a_bad_environment_variable_is_refused_before_anything_runs(argv, name, value, line, capsys, monkeypatch):
    """Checked first, under --dry-run too: one line, status 2, within seconds (no plan, no training)."""
    import time
    monkeypatch.setenv(name, value)
    start = time.perf_counter()
    got, said, err = _run_cli(argv, capsys)
    assert got == 2 and len(said) == 1 and line in said[0], err
    assert "[plan]" not in err and "[until-decided]" not in err and time.perf_counter() - start < 10


def test_a_killed_jobs_staging_folder_is_removed_and_a_live_ones_kept(tmp_path):
    import os
    import subprocess
    import sys
    from fssl_core.job.preflight import remove_stale_staging
    from fssl_core.report.publish import STAGING_OWNER as OWNER
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    gone, live, unowned = (tmp_path / f".staging-nb-{k}" for k in ("gone", "live", "unowned"))
    for folder in (gone, live, unowned):
        folder.mkdir()
    (gone / OWNER).write_text(dead)
    (live / OWNER).write_text(str(os.getpid()))
    assert remove_stale_staging(tmp_path) == [gone]          # a fresh folder without an owner may be a live old job's
    assert live.exists() and unowned.exists() and not gone.exists()
    os.utime(unowned, (0, 0))
    assert remove_stale_staging(tmp_path) == [unowned]
