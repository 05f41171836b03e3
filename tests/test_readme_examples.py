"""The README's "Use it from Python or the shell" examples run as written, with the data where the README
says (FSSL_DATA) and the environment the two commands built: the Python block and the `run` and
`partition` lines, the training ones at 2 rounds instead of 50 (the one change, checked to be the only
one), the bench line with one case (its quick look takes ~2.5 min). Each runs in a fresh process."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import requires_mnist

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("## Use it from Python or the shell", 1)[1].split("\n## ", 1)[0]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", _section(), re.S)


def _shorter(text: str) -> str:
    assert text.count("rounds=50") == 1, "the example's round count moved: update this test"
    return text.replace("rounds=50", "rounds=2")


def _environment(tmp_path: Path) -> dict[str, str]:
    from fssl_core.data.datasets import data_root
    return {**os.environ, "FSSL_DATA": str(data_root()), "FSSL_RUNS": str(tmp_path / "runs")}


@requires_mnist
def test_the_python_example_runs_as_written(tmp_path):
    code, = _blocks("python")
    done = subprocess.run([sys.executable, "-c", _shorter(code)], cwd=tmp_path, env=_environment(tmp_path),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    accuracy, seconds_per_round = map(float, done.stdout.split())
    assert 15 < accuracy <= 100 and seconds_per_round > 0
    assert len(list((tmp_path / "runs").iterdir())) == 1        # runs/<hash of the config>/


def _commands() -> dict[str, str]:
    lines = [line.split("#", 1)[0].strip() for line in _blocks("bash")[0].splitlines()]
    return {line.split()[3]: line for line in lines if line.startswith("python -m fssl_core ")}


@requires_mnist
@pytest.mark.parametrize("command", ["run", "partition", "bench"])
def test_each_shell_example_runs_as_written(command, tmp_path):
    line = _commands()[command]
    if command == "run":
        line = _shorter(line)
    if command == "bench":
        line += " cases=mnist_fedavg"
    argv = [sys.executable, *line.split()[1:]]
    done = subprocess.run(argv, cwd=tmp_path, env=_environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.splitlines()
    if command == "run":
        assert len(out) == 1 and "accuracy" in out[0]
    if command == "partition":
        assert out[0].startswith("partition=noniid3 dataset=mnist clients=100")
    if command == "bench":
        assert out[1].startswith("mnist_fedavg on cpu") and "cohort" in out[1]
