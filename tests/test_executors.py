"""Executors: the registry names them without importing torch, unknown names and options are refused
naming what is allowed, and an executor added as one class plus one registry line trains exactly the
runs the store lacks, through run_all."""
import re
import subprocess
import sys

import pytest

from fssl_core.config import ConfigError, key_value_pairs

from fssl_core.run_config import RunConfig
from fssl_core.executors import EXECUTORS, default_workers, executor_named, run_all
from fssl_core.store import RunStore
from fssl_core.engine.trainer import train

from . import toy_executor
from .conftest import requires_mnist
from .test_store import TINY


def test_importing_the_executors_imports_no_torch():
    # the command line lists and checks executor names on every start: it must not pay for torch
    code = "import fssl_core.executors, sys; assert 'torch' not in sys.modules, sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_unknown_executor_is_refused_naming_the_value_and_the_allowed_names(monkeypatch):
    monkeypatch.delenv("FSSL_EXECUTOR", raising=False)
    with pytest.raises(ConfigError, match=r"executor='dask': must be one of local, ray \(also \$FSSL_EXECUTOR\)"):
        executor_named("dask")
    with pytest.raises(ConfigError, match=r"nodes: not an option of executor='local' \(its options: batch, tracker, workers\)"):
        executor_named("local", nodes=2)
    assert executor_named().slots([]) >= 1                # default: the local executor


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(EXECUTORS, "toy", "tests.toy_executor:ToyExecutor")
    toy_executor.TRAINED.clear()
    return toy_executor.TRAINED


def test_a_registered_executor_gets_the_protocols_defaults_and_ignores_workers(toy):
    with executor_named("toy", workers=4) as executor:     # `workers` is for an executor that takes it
        assert isinstance(executor, toy_executor.ToyExecutor) and executor.slots([RunConfig(**TINY)]) == 1
    with pytest.raises(ConfigError, match=r"gpus_per_run: only for executor='ray' \(the toy executor has no such"):
        executor_named("toy", gpus_per_run=0.5)


@requires_mnist
def test_a_registered_executor_trains_exactly_the_runs_the_store_lacks(toy, tmp_path, monkeypatch):
    one, two, three = (RunConfig(**{**TINY, "rounds": 1, "seed": s}) for s in (1, 2, 3))
    store = RunStore(tmp_path)
    stored = train(two, store, progress=False)
    results = run_all([one, two, three, one], store=store, progress=False, executor="toy")
    assert [c.run_id for c in toy] == [one.run_id, three.run_id]      # each missing run once, nothing stored again
    assert [r.config.run_id for r in results] == [one.run_id, two.run_id, three.run_id, one.run_id]
    assert results[1].summary == stored.summary
    assert all(r.summary == store.load(r.config).summary for r in results)
    toy.clear()
    monkeypatch.setenv("FSSL_EXECUTOR", "toy")               # the default executor's name
    four = RunConfig(**{**TINY, "rounds": 1, "seed": 4})
    assert [r.config.run_id for r in run_all([one, four], store=store, progress=False)] == [one.run_id, four.run_id]
    assert toy == [four]


@pytest.mark.parametrize("text,workers", [("3", 3), ("1", 1), (" 2 ", 2), ("abc", None), ("0", None), ("-1", None),
                                          ("1.5", None), ("", None), ("٣", None)])
def test_fssl_workers_is_a_whole_number_or_one_clear_error(monkeypatch, text, workers):
    monkeypatch.setenv("FSSL_WORKERS", text)
    if workers is None:
        with pytest.raises(ConfigError, match=rf"^FSSL_WORKERS={re.escape(repr(text))}: must be a whole number"):
            default_workers([])
    else:
        assert default_workers([]) == workers


def test_a_worker_that_cannot_write_its_run_raises_the_stores_one_line_and_leaves_no_worker(tmp_path):
    """A run whose store write fails inside a worker process (here its lock file's path is a directory)
    reaches the caller as the store's StoreIOError, the line `reproduce` prints before exiting with 4
    (cli.IO_FAILURE), and the other worker is stopped, not left behind."""
    import multiprocessing

    from fssl_core import cli
    from fssl_core.store import StoreIOError

    from .test_cli import TINY_RUN
    healthy, broken = (RunConfig.from_strings(key_value_pairs([*TINY_RUN, f"seed={s}"])) for s in (1, 2))
    store = RunStore(tmp_path)
    store.dir(broken).mkdir()
    (store.dir(broken) / ".lock").mkdir()
    with pytest.raises(StoreIOError) as raised:
        run_all([healthy, broken], store=store, progress=False, workers=2, executor="local")
    assert str(raised.value) == f"{store.dir(broken) / '.lock'}: cannot open the lock file: Is a directory"
    assert multiprocessing.active_children() == []
