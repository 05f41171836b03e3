"""The command line: key=value parsing and `partition`'s table and JSON."""
import errno
import json
import os

import pytest
import torch

from fssl_core import cli
from fssl_core.config import ConfigError, key_value_pairs
from fssl_core.run_config import RunConfig
from fssl_core.data import datasets
from fssl_core.engine.federation import Federation

from .conftest import requires_mnist


def test_a_repeated_key_is_refused_naming_both_values():
    assert key_value_pairs(["seed=1", "clients=4"]) == {"seed": "1", "clients": "4"}
    with pytest.raises(ConfigError, match=r"seed given twice \(seed='1' and seed='2'\)"):
        key_value_pairs(["seed=1", "clients=4", "seed=2"])
    assert cli.main(["partition", "seed=1", "seed=2"]) == 2


def _tiny(num_classes: int, per_class: int = 10) -> datasets.ImageData:
    """num_classes · per_class 2×2 grey images, labels 0, 1, ..., C-1, 0, 1, ... (no files needed)."""
    y = torch.arange(num_classes * per_class) % num_classes
    x = torch.zeros(len(y), 1, 2, 2)
    return datasets.ImageData("mnist", x, y, x[:4], y[:4], num_classes=num_classes, mean=(0.5,), std=(0.5,))


@pytest.fixture
def tiny_data(monkeypatch):
    """`partition` on a 4-class data set of 40 samples in place of MNIST."""
    data = _tiny(4)
    monkeypatch.setattr(datasets, "load_dataset", lambda name, *a, **k: data)
    return data


def _counts(pairs: list[str], data: datasets.ImageData) -> dict:
    cfg = cli.partition_config(key_value_pairs(pairs))
    return Federation.partition_of(cfg, data).counts(data.train_y.numpy(), data.num_classes)


def test_partition_json_is_the_counts_on_one_line(tiny_data, capsys):
    pairs = ["clients=4", "clients_per_round=4", "labeled_ratio=0.2", "seed=3"]
    assert cli.main(["partition", "--json", *pairs]) == 0
    assert capsys.readouterr().out == json.dumps(_counts(pairs, tiny_data), sort_keys=True) + "\n"


def test_partition_table_has_a_row_per_client_with_the_counts(tiny_data, capsys):
    pairs = ["partition=noniid1", "clients=4", "clients_per_round=4", "labeled_ratio=0.2", "seed=3"]
    assert cli.main(["partition", *pairs]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "partition=noniid1 dataset=mnist clients=4 γ=0.2 seed=3"
    assert lines[1] == "40 samples: 8 labeled at the clients, 32 unlabeled; per class: labeled/unlabeled"
    assert lines[2].split() == ["party", "labeled", "unlabeled", "0", "1", "2", "3"]
    assert len(lines) == 3 + 4 and len({len(line) for line in lines[2:]}) == 1     # fixed width
    for k, (line, client) in enumerate(zip(lines[3:], _counts(pairs, tiny_data)["clients"])):
        labeled, unlabeled = client["labeled"], client["unlabeled"]
        cells = [f"{labeled[c]}/{unlabeled[c]}" if labeled[c] + unlabeled[c] else "-" for c in "0123"]
        assert line.split() == [str(k), "2", "8", *cells]      # 10 samples a client, round(0.2 · 10) labeled


def test_partition_table_puts_the_server_first(tiny_data, capsys):
    # server_iid balanced: the 8 server labels are 2 of each class; stratified: the other 32, 2 a class to each client
    assert cli.main(["partition", "partition=server_iid", "server_labeled=8", "server_balanced=true", "stratified=true",
                     "clients=4", "clients_per_round=4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "partition=server_iid dataset=mnist clients=4 server_labeled=8 server_balanced=True stratified=True seed=1234"
    assert lines[1].startswith("40 samples: 8 labeled at the server, 32 unlabeled;")
    assert lines[3].split() == ["server", "8", "0", "2/0", "2/0", "2/0", "2/0"]
    assert [line.split() for line in lines[4:]] == [[str(k), "0", "8", "0/2", "0/2", "0/2", "0/2"] for k in range(4)]


def test_many_classes_are_summarised():
    classes = [str(c) for c in range(12)]
    labeled, unlabeled = dict.fromkeys(classes, 0), dict.fromkeys(classes, 0)
    labeled.update({"0": 3, "5": 1})
    unlabeled.update({"0": 7, "5": 8, "11": 12})
    counts = {"server": {"labeled": dict.fromkeys(classes, 0)}, "clients": [{"labeled": labeled, "unlabeled": unlabeled}]}
    lines = cli.partition_table(RunConfig(clients=1, clients_per_round=1), counts).splitlines()
    assert lines[1] == "31 samples: 4 labeled at the clients, 27 unlabeled; 12 classes, summarised"
    assert lines[2].split() == ["party", "labeled", "unlabeled", "labeled", "classes", "unlabeled", "classes",
                                "largest", "(class:labeled/unlabeled)"]
    assert lines[3].split() == ["0", "4", "27", "2", "3", "11:0/12", "0:3/7", "5:1/8"]


@requires_mnist
def test_the_default_mnist_partition_shows_all_100_clients_in_short_lines(capsys):
    assert cli.main(["partition"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 + 100 and lines[-1].split()[:3] == ["99", "60", "540"]
    assert max(len(line) for line in lines) <= 100


# --- what `run` refuses, with status 2 and one message, never a traceback ------------------------------------

def test_run_refuses_a_bad_value_a_missing_data_set_and_a_missing_device(tmp_path, monkeypatch, capsys):
    def absent(name, *args, **kwargs):
        raise datasets.DatasetUnavailable(f"data set {name!r} was not found under root /nowhere")
    runs = ["run", "--quiet", "--runs", str(tmp_path), "rounds=1"]
    assert cli.main([*runs, "tau_mu=nan"]) == 2
    assert capsys.readouterr().err == "error: RunConfig.tau_mu=nan: must be a finite number within [0, 1]\n"
    monkeypatch.setattr("fssl_core.engine.federation.load_dataset", absent)
    assert cli.main([*runs, "dataset=cifar10"]) == 2
    assert capsys.readouterr().err == "error: data set 'cifar10' was not found under root /nowhere\n"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main([*runs, "device=cuda"]) == 2
    assert capsys.readouterr().err.startswith("error: RunConfig.device='cuda': no CUDA device is available here")


# Held-out bad inputs a user tried: each is refused by RunConfig before any data is read, so `run` needs no data set.
# (arguments after `run`, the one line printed on stderr); each exits 2 without a traceback.
BAD_RUN_INPUTS = [
    # values the float32 trainer cannot represent (torch: "value cannot be converted to type float without overflow")
    (["lr=1e39"], "RunConfig.lr=1e+39: must be a finite number within [1e-7, 3.4e38]"),
    (["weight_decay=3.5e38"], "RunConfig.weight_decay=3.5e+38: must be a finite number within [0, 3.4e38]"),
    (["algorithm=fedmatch", "momentum=0", "fedmatch_lambda_l2=1e300"],
     "RunConfig.fedmatch_lambda_l2=1e+300: must be a finite number within [0, 3.4e38]"),
    # numbers Python reads but a reader does not: '1_0' is 10, '٣' is 3
    (["rounds=1_0"], "RunConfig.rounds='1_0': expected int, written in ASCII digits (e.g. 10)"),
    (["rounds=٣"], "RunConfig.rounds='٣': expected int, written in ASCII digits (e.g. 10)"),
    (["lr=0_1"], "RunConfig.lr='0_1': expected float, written in ASCII digits (e.g. 0.01 or 1e-4)"),
    # accepted but meaningless
    (["resplit_train=1000", "resplit_test=1"],
     "RunConfig.resplit_test=1, dataset='mnist': must be at least 100, 10 test samples for each of its 10 classes "
     "(below it one sample is over 1 accuracy point; resplit_test=1 scores 0% or 100%)"),
    (["partition=noniid1", "classes_per_client=1000"],
     "RunConfig.classes_per_client=1000, dataset='mnist': must be at most 10, the classes mnist has"),
    (["algorithm=fedmatch", "momentum=0", "clients=20", "fedmatch_helpers=100"],
     "RunConfig.fedmatch_helpers=100, clients=20: must be at most clients - 1 = 19; FedMatch's helpers are other "
     "clients"),
]


@pytest.mark.parametrize("pairs, line", BAD_RUN_INPUTS)
def test_a_bad_input_to_run_is_one_line_and_exit_2(pairs, line, tmp_path, capsys):
    assert cli.main(["run", "--quiet", "--runs", str(tmp_path), *pairs]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"error: {line}\n")
    assert list(tmp_path.iterdir()) == []          # nothing written


TABLE7_VARIANTS = ("siamese=no, siamese=yes, alpha_max=0.9, alpha_max=0.99, alpha_max=0.999, alpha_max=0.9999, "
                   "quantile_curve=linear, quantile_curve=rectangle")
# (--only and --param, the one line on stderr): `reproduce --dry-run` refuses them while planning, nothing trained
BAD_REPRODUCE_INPUTS = [
    # fedsiam_table6 iterates over its datasets: null was a TypeError in cells.table6_columns
    (["--only", "fedsiam_table6", "--param", "datasets=null"],
     "reproduce: --param datasets=null: fedsiam_table6.ipynb expects a JSON list of strings, e.g. --param "
     "datasets='[\"mnist\"]'"),
    # the cells' ValueError, with a traceback
    (["--only", "fedsiam_table7", "--param", 'variants=["nonexistent"]'],
     f"fedsiam_table7.ipynb: variants: 'nonexistent' must be one of {TABLE7_VARIANTS}"),
    # a TypeError (unhashable type: 'list') in the cells' membership test: refused by the plan's annotation first
    (["--only", "fedsiam_table7", "--param", 'variants=[["siamese=yes"]]'],
     """reproduce: --param variants=[["siamese=yes"]]: fedsiam_table7.ipynb expects a JSON list of strings (or null), """
     """e.g. --param variants='["..."]'"""),
]


@pytest.mark.parametrize("arguments, line", BAD_REPRODUCE_INPUTS)
def test_a_bad_notebook_parameter_is_one_line_and_exit_2(arguments, line, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FSSL_RUNS", str(tmp_path))
    assert cli.main(["reproduce", "--profile", "quick", "--dry-run", *arguments]) == 2
    assert capsys.readouterr().err == f"error: {line}\n"


def test_partition_needs_no_algorithm_and_a_split_the_data_refuse_is_an_error(tiny_data, capsys):
    assert cli.partition_config({"partition": "server_lda"}).algorithm in ("fedsiam_d", "fedmix")
    assert cli.partition_config({}).algorithm == "fedavg"
    # 40 samples over 4 clients leave each 9 unlabeled, too few for 20 stream parts: the partition's message, status 2
    assert cli.main(["partition", "stream_parts=20", "clients=4", "clients_per_round=4"]) == 2
    assert capsys.readouterr().err.startswith("error: partition 'iid': stream_parts=20 must be at most every client's")


def test_the_profile_flag_wins_over_fssl_profile_and_the_job_says_where_its_profile_came_from(monkeypatch):
    """$FSSL_PROFILE=quick once silently overrode --profile smoke, so a smoke command could rewrite the
    committed tables. The job's profile is decided in one place (profiles.job_profile)."""
    from fssl_core.profiles import job_profile
    monkeypatch.setenv("FSSL_PROFILE", "quick")
    assert job_profile("smoke")[0].name == "smoke" and job_profile("smoke")[1] == "--profile; $FSSL_PROFILE=quick ignored"
    assert job_profile(None) == (job_profile("quick")[0], "$FSSL_PROFILE")
    monkeypatch.delenv("FSSL_PROFILE")
    assert job_profile(None)[0].name == "headline" and job_profile(None)[1] == "the default"
    monkeypatch.setenv("FSSL_PROFILE", "full")
    with pytest.raises(ConfigError, match=r"\$FSSL_PROFILE='full': must be one of smoke, headline, quick, paper"):
        job_profile(None)
    seen = {}
    monkeypatch.setattr("fssl_core.job.reproduce.reproduce", lambda **kwargs: seen.update(kwargs))
    assert cli.main(["reproduce", "--only", "x"]) == 0 and seen["profile"] is None and seen["replace"] is False
    assert cli.main(["reproduce", "--profile", "smoke", "--replace"]) == 0 and seen["profile"] == "smoke"
    assert seen["replace"] is True


# --- what `run` prints and its exit status ---------------------------------------------------------------

def _summary(status: str, accuracy: float | None) -> dict:
    return {"accuracy": accuracy, "best_accuracy": 97.5 if accuracy else None, "best_round": 48 if accuracy else None,
            "rounds": 50, "seconds_per_round": 12.345, "upload_bytes": 30_000_000, "download_bytes": 13_680_000,
            "status": status, "run_dir": "runs/0123456789abcdef"}


@pytest.mark.parametrize("status,accuracy,code", [("ok", 97.31, 0), ("at-chance", 9.8, 3), ("diverged", None, 3)])
def test_run_prints_one_short_line_or_json_and_exits_3_for_a_run_that_is_no_result(monkeypatch, tmp_path, capsys,
                                                                                  status, accuracy, code):
    from fssl_core.engine import trainer
    from fssl_core.store import RunResult
    summary = _summary(status, accuracy)
    monkeypatch.setattr(trainer, "train", lambda cfg, store, progress=True, tracker=None: RunResult(cfg, [], summary))
    assert cli.main(["run", "--quiet", "--runs", str(tmp_path), "rounds=50"]) == code
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and len(line) < 200
    assert line.startswith("fedavg mnist iid γ=0.1 K=100 R=50 seed=1234")
    if accuracy:
        assert f"accuracy {accuracy:.2f}% (best 97.50% at round 48), 50 rounds, 12.35 s/round, 43.7 MB exchanged" in line
    assert line.rstrip().endswith(f"status {status} -> runs/0123456789abcdef")
    assert cli.main(["run", "--quiet", "--json", "--runs", str(tmp_path), "rounds=50"]) == code
    assert json.loads(capsys.readouterr().out) == summary


def test_a_run_that_diverged_in_its_first_round_is_one_line(monkeypatch, tmp_path, capsys):
    """lr=3.4e38 diverges in round 1: no round finished, no time per round (was a TypeError traceback)."""
    from fssl_core.engine import trainer
    from fssl_core.store import RunResult
    summary = {**_summary("diverged", None), "rounds": 0, "seconds_per_round": None, "upload_bytes": 0,
               "download_bytes": 0}
    monkeypatch.setattr(trainer, "train", lambda cfg, store, progress=True, tracker=None: RunResult(cfg, [], summary))
    assert cli.main(["run", "--quiet", "--runs", str(tmp_path), "rounds=50"]) == 3
    assert capsys.readouterr().out.endswith(": no accuracy, 0 rounds, 0.0 MB exchanged, status diverged -> "
                                            "runs/0123456789abcdef\n")


def test_an_interrupted_run_says_how_to_resume_and_exits_130_without_a_traceback(monkeypatch, tmp_path, capsys):
    from fssl_core.engine import trainer

    def interrupted(cfg, store, progress=True, tracker=None):
        raise KeyboardInterrupt
    monkeypatch.setattr(trainer, "train", interrupted)
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", "--quiet", "--runs", str(tmp_path), "rounds=50"])
    assert stop.value.code == 130
    err = capsys.readouterr().err
    assert err.strip().startswith("[run] interrupted: fedavg mnist iid") and "Traceback" not in err
    assert err.rstrip().endswith("resumes from its last checkpoint when the same command is run again")


# --- I/O failures: one line naming the path and the cause, exit status 4 (cli.IO_FAILURE), the store as it was ------

# a run that needs no data files: synthetic CIFAR-10, 2 rounds of 3 clients (a few seconds on a CPU)
TINY_RUN = ["dataset=synthetic_cifar10", "resplit_train=120", "resplit_test=100", "clients=6", "clients_per_round=3",
            "rounds=2", "local_epochs=1", "batch_size=10", "eval_every=2"]


def _refuse(error: int):
    def refuse(path):
        raise OSError(error, os.strerror(error), str(path))
    return refuse


def _read_only(monkeypatch, root):
    """The disk under `root` refuses every new directory and every file opened for writing (EROFS), as a
    read-only mount does; tests run as root, where chmod refuses nothing."""
    mkdir, open_ = os.mkdir, os.open

    def guarded_mkdir(path, *args, **kwargs):
        if str(path).startswith(str(root)):
            _refuse(errno.EROFS)(path)
        return mkdir(path, *args, **kwargs)

    def guarded_open(path, flags, *args, **kwargs):
        if str(path).startswith(str(root)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            _refuse(errno.EROFS)(path)
        return open_(path, flags, *args, **kwargs)
    monkeypatch.setattr(os, "mkdir", guarded_mkdir)
    monkeypatch.setattr(os, "open", guarded_open)


def _read_only_fresh(monkeypatch, root, run_dir):
    _read_only(monkeypatch, root)
    return f"{run_dir}: cannot create the run's directory: Read-only file system"


def _read_only_unfinished(monkeypatch, root, run_dir):
    from fssl_core.store import CONFIG, atomic_write_text
    atomic_write_text(run_dir / CONFIG, "{}")     # an unfinished run: no result.json; the lock is refused first
    _read_only(monkeypatch, root)
    return f"{run_dir}/.lock: cannot open the lock file: Read-only file system"


def _runs_is_a_file(monkeypatch, root, run_dir):
    root.rmdir()
    root.write_text("not a store")
    return f"{root}: the run store is a file, not a directory"


def _run_dir_is_a_file(monkeypatch, root, run_dir):
    run_dir.write_text("not a run")
    return f"{run_dir}: a file where run {run_dir.name}'s directory belongs; move it away"


@pytest.mark.parametrize("setup", [_read_only_fresh, _read_only_unfinished, _runs_is_a_file, _run_dir_is_a_file])
def test_a_store_that_cannot_be_written_is_one_line_and_exit_4(setup, tmp_path, monkeypatch, capsys):
    root = tmp_path / "runs"
    root.mkdir()
    run_dir = root / RunConfig.from_strings(key_value_pairs(TINY_RUN)).run_id
    line = setup(monkeypatch, root, run_dir)
    assert cli.main(["run", "--quiet", "--runs", str(root), *TINY_RUN]) == cli.IO_FAILURE == 4
    assert capsys.readouterr().err == f"error: {line}\n"


def test_a_full_disk_names_the_file_and_leaves_the_store_to_resume(tmp_path, monkeypatch, capsys):
    """torch.save on a full disk raised RuntimeError('unexpected pos ...') while handling the write's ENOSPC, a
    traceback naming no file. Round 2's checkpoint fails here: round 1's stays, and the same command resumes."""
    from fssl_core.store import CHECKPOINT, RESULT, RunStore
    from fssl_core.store.integrity import read_checkpoint
    save, saved = torch.save, []

    def full_at_round_2(obj, f):
        if obj["round"] == 2:
            f.write(b"part of a checkpoint")
            try:        # as the file object's write raises it: no file named
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            except OSError:
                raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 25344 vs 25248")
        saved.append(obj["round"])
        return save(obj, f)
    monkeypatch.setattr(torch, "save", full_at_round_2)
    cfg = RunConfig.from_strings(key_value_pairs(TINY_RUN))
    run_dir = RunStore(tmp_path).dir(cfg)
    assert cli.main(["run", "--quiet", "--runs", str(tmp_path), *TINY_RUN]) == 4
    assert capsys.readouterr().err == f"error: {run_dir / CHECKPOINT}: cannot write: No space left on device\n"
    assert saved == [0, 1] and {p.name for p in run_dir.iterdir()} == {
        ".lock", "config.json", "env.json", "metrics.jsonl", CHECKPOINT}      # no temporary file, no result
    assert read_checkpoint(run_dir / CHECKPOINT, cfg, "cpu")["round"] == 1
    monkeypatch.setattr(torch, "save", save)       # space again: the same command resumes after round 1
    assert cli.main(["run", "--quiet", "--runs", str(tmp_path), *TINY_RUN]) in (0, 3)
    assert (run_dir / RESULT).exists() and RunStore(tmp_path).load(cfg).summary["rounds"] == 2


def test_an_empty_runs_is_refused_and_writes_nothing_in_the_working_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--quiet", "--runs", "", *TINY_RUN]) == 2
    assert capsys.readouterr().err == ("error: run store root '': empty; give a directory (--runs DIR), or none for "
                                       "$FSSL_RUNS or ./runs\n")
    monkeypatch.setenv("FSSL_RUNS", "")
    assert cli.main(["run", "--quiet", *TINY_RUN]) == 2
    assert capsys.readouterr().err == "error: $FSSL_RUNS='': empty; set it to a directory, or unset it for ./runs\n"
    assert cli.main(["records", "--runs", ""]) == 2
    assert list(tmp_path.iterdir()) == []


def _executed(argv: list[str], timeout: int) -> tuple[str, set[str], list[str]]:
    """`python -X importtime -m fssl_core *argv`: what it printed, the modules it imported (a module bound by
    cli.defer_torch and never read is not imported: no line), and where a module of torch or torchvision was, the
    chain that imported the first of them (innermost first: -X importtime lists a module before its importers)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "fssl_core", *argv], capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    said = out.stdout + "".join(line + "\n" for line in out.stderr.splitlines() if not line.startswith("import time:"))
    rows = [line.rsplit("|", 1)[-1] for line in out.stderr.splitlines() if line.startswith("import time:")]
    names = [row.strip() for row in rows]
    chain: list[str] = []
    first = next((i for i, name in enumerate(names) if name.split(".")[0] in ("torch", "torchvision")), None)
    if first is not None:
        depth = len(rows[first]) - len(names[first])
        for row in rows[first:]:
            if len(row) - len(row.lstrip()) <= depth:
                chain.append(row.strip())
                depth = len(row) - len(row.lstrip()) - 1
    return said, set(names), chain


@pytest.mark.parametrize("argv", [["--help"], *([command, "--help"] for command in (
    "run", "records", "verify", "partition", "bench", "gpu-check", "fingerprint", "flower", "export", "reproduce",
    "site"))])
def test_help_imports_no_torch(argv):
    """`--help` answers from the parser alone: torch (seconds to import, more on a loaded machine) is not imported."""
    said, imported, chain = _executed(argv, timeout=120)
    assert "usage:" in said
    assert not chain and "fssl_core.cli" in imported, f"torch ran, imported by: {' <- '.join(chain)}"


@pytest.mark.parametrize("argv", [["reproduce", "--profile", "quick", "--dry-run"], ["reproduce", "--until-decided",
                                                                                      "--dry-run"]])
def test_a_dry_run_plans_without_running_torch(argv):
    """A dry run plans every notebook's runs (their configs, run ids and the store's answer for each) without
    running torch or torchvision (cli.defer_torch): no module on the plan's path reads an attribute of torch as it is
    imported. On a failure the chain names the module that ran it."""
    said, imported, chain = _executed(argv, timeout=600)
    assert "fssl_core.run_config" in imported and ("[plan]" in said or "[until-decided]" in said), said[-2000:]
    assert not chain, f"torch ran, imported by: {' <- '.join(chain)}"
    if "--until-decided" not in argv:     # the rule's looks compute their boundaries (scipy); a plan computes no test
        assert not {"scipy.stats", "matplotlib.pyplot"} & imported     # nor draws a figure


def test_a_run_imports_torchvision_only_to_read_files():
    """What `run` imports before it loads data (the config, the engine, the store) leaves torchvision out: it
    brings torch._dynamo, about as long to import as torch; data/datasets.py imports it where CIFAR's or SVHN's files
    are read or a missing file is downloaded. (Fashion-)MNIST's files, all here, are read without it."""
    import subprocess
    import sys
    code = ("import sys, fssl_core.cli, fssl_core.run_config, fssl_core.engine.trainer, fssl_core.job.plan; "
            "from fssl_core.data.datasets import data_root, load_dataset; "
            "(data_root() / 'MNIST' / 'raw').is_dir() and load_dataset('mnist', download=False); "
            "print(sorted(m for m in ('torchvision', 'torch._dynamo') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
