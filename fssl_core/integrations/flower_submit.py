"""`python -m fssl_core flower [APP] [SUPERLINK] [--run-config "..."] [--federation-config "..."]`: `flwr run` with
the exit status `python -m fssl_core run` gives.

Flower's `flwr run` exits 0 once the SuperLink has accepted the run (with `--stream`, once its logs end),
whatever became of it: a refused config, a crashed ServerApp and a run at chance all exit 0, and Flower refuses
an unknown `--run-config` key as "[code: 15] Invalid run configuration." without its name. This command checks
the keys and the config here first (one line, exit 2: nothing is submitted), submits with `flwr run --format
json`, streams the run's log (`flwr log --stream`), waits for its end (`flwr ls --run-id`), and exits as `run`
does: 0 done; 2 refused; 3 diverged or at chance (the run is recorded); 1 failed otherwise (Flower's one-line
reason printed); 130 stopped (`flwr stop`, or Ctrl-C here, which asks Flower to stop the run: the record keeps
every round it finished, and the same command resumes it). The ServerApp tells refused and not-a-result apart
by the first words of its failure (flower.REFUSED, flower.NOT_A_RESULT), which Flower keeps as the run's
status details.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from .. import __version__
from ..config import ConfigError
from .flower_keys import NOT_A_RESULT, REFUSED, check_keys, code_digest, run_config_of

DONE, FAILED, STOPPED = "finished:completed", "finished:failed", "finished:stopped"
EXIT = {DONE: 0, STOPPED: 130}
POLL = 1.0           # seconds between two looks at the run's status


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fssl_core flower", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("app", nargs="?", default="flower-app", help="the Flower app's folder (default flower-app)")
    p.add_argument("superlink", nargs="?", default=None, help="the SuperLink connection (default: Flower's default)")
    p.add_argument("--run-config", "-c", action="append", default=[], help="as flwr run's --run-config")
    p.add_argument("--federation-config", action="append", default=[], help="as flwr run's --federation-config")
    p.add_argument("--quiet", action="store_true", help="no log stream: the outcome's line alone")
    return p


def checked_config(app: Path, overrides: list[str]):
    """The RunConfig the app's defaults with `overrides` (Flower's `key=value` syntax, Flower's parser) name,
    as the ServerApp will build it, and the run store it names; ConfigError (one line) for an unknown key or a refused value."""
    # flwr (and .flower, which needs it): the [flower] extra, absent from a plain install
    from flwr.common.config import parse_config_args
    from .flower import flower_trainer
    defaults = tomllib.loads((app / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    given = parse_config_args(overrides) if overrides else {}
    check_keys(given, defaults)
    cfg, options = run_config_of({**defaults, **given})
    return flower_trainer(cfg), str(options["runs"])


def flwr(*args: str) -> list[str]:
    command = shutil.which("flwr", path=str(Path(sys.executable).parent)) or shutil.which("flwr")
    if command is None:
        raise ConfigError("no `flwr` command: pip install -e '.[flower]'")
    return [command, *args]


def submit(args, runs: str) -> int:
    """Start the run, with this checkout's fssl_core and run store (`runs` as this process resolves it: the
    SuperLink would resolve a relative one from where it started); its Flower run id."""
    from ..store import RunStore      # torch, kept off `flower --help` (cli imports this module for it)
    ours = f'fssl-code="{__version__}:{code_digest()}" runs={json.dumps(str(RunStore(runs or None).root.resolve()))}'
    command = flwr("run", args.app, *([args.superlink] if args.superlink else []), "--format", "json",
                   *[a for c in [*args.run_config, ours] for a in ("--run-config", c)],
                   *[a for c in args.federation_config for a in ("--federation-config", c)])
    done = subprocess.run(command, capture_output=True, text=True)
    reply = _json_in(done.stdout)
    if done.returncode != 0 or not reply.get("success") or not reply.get("run-id"):
        reason = reply.get("error-message") or (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
        raise SubmitFailed(f"flwr run did not start the run (exit {done.returncode}): {reason}")
    return int(reply["run-id"])


class SubmitFailed(Exception):
    pass


def status(run_id: int, superlink: str | None) -> dict:
    done = subprocess.run(flwr("ls", *([superlink] if superlink else []), "--run-id", str(run_id), "--format", "json"),
                          capture_output=True, text=True)
    runs = _json_in(done.stdout).get("runs") or [{}]
    return runs[0]


def wait(run_id: int, superlink: str | None, quiet: bool) -> dict:
    """The run's last status, its log streamed meanwhile (unless quiet)."""
    stream = None if quiet else subprocess.Popen(flwr("log", str(run_id), *([superlink] if superlink else []),
                                                      "--stream"))
    try:
        while not (now := status(run_id, superlink)).get("status", "").startswith("finished"):
            time.sleep(POLL)
        return now
    except KeyboardInterrupt:
        print(f"\n[flower] stopping Flower run {run_id} at its next round (flwr stop) ...", file=sys.stderr)
        subprocess.run(flwr("stop", str(run_id), *([superlink] if superlink else [])), capture_output=True)
        while not (now := status(run_id, superlink)).get("status", "").startswith("finished"):
            time.sleep(POLL)
        return now
    finally:
        if stream is not None:
            try:
                stream.wait(timeout=10)      # the stream ends with the run; its last lines first
            except subprocess.TimeoutExpired:
                stream.terminate()


def outcome(final: dict) -> tuple[int, str]:
    """Exit status and the line that says why, from the run's last status in `flwr ls`."""
    state, details = final.get("status", "unknown"), final.get("status-details", "")
    for marker, code in ((REFUSED, 2), (NOT_A_RESULT, 3)):
        if marker in details:
            return code, details.split(marker, 1)[1].splitlines()[0]
    if state in EXIT:
        return EXIT[state], f"Flower run {final.get('run-id')}: {state}" + (": the record keeps every round it "
                            "finished; the same command resumes it" if state == STOPPED else "")
    return 1, f"Flower run {final.get('run-id')}: {state}: {details.splitlines()[0] if details else 'no reason given'}"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        cfg, runs = checked_config(Path(args.app), args.run_config)
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"[flower] run {cfg.run_id} (trainer={cfg.trainer}): submitting to Flower", file=sys.stderr)
    try:
        run_id = submit(args, runs)
        code, line = outcome(wait(run_id, args.superlink, args.quiet))
    except (SubmitFailed, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if code == 0:
        line = finished_line(cfg, runs) or line
    print(("" if code == 0 else "error: ") + line, file=sys.stderr)
    return code


def finished_line(cfg, runs: str) -> str | None:
    """The run's line from its record in the store this command passed."""
    from ..store import RunStore, describe      # as submit's
    result = RunStore(runs or None).load(cfg)
    if result is None:
        return None
    return f"{describe(cfg)}: {result.status}, accuracy {result.accuracy}%, run {cfg.run_id} in {RunStore(runs or None).root}"


def _json_in(text: str) -> dict:
    """The JSON object in a Flower command's stdout (which may print a notice before it)."""
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else {}
    except json.JSONDecodeError:
        return {}
