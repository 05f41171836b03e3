"""The Flower app's run-config keys, in Flower's idiom: what `flwr run flower-app --run-config "..."` takes.

A Flower app's keys are kebab-case, and Flower's apps and baselines share a few names for the same knobs
(`num-server-rounds`, `fraction-train`, `local-epochs`, `lr`, `batch-size`): the app takes those, and every
other RunConfig field under its name in kebab-case (`labeled_ratio` -> `labeled-ratio`). One key a field:
Flower fuses the app's defaults with the overrides before the ServerApp sees them, so two keys for one field
could not tell which one the user set. `fraction-train` is Flower's share of the clients sampled a round
(flwr.serverapp.strategy.FedAvg's `fraction_train`); fssl samples a whole number of clients, so the share
times `clients` must be one (0.1 of 100: 10).

Flower's own CLI refuses a key its app does not list with "[code: 15] Invalid run configuration." and no name;
`check_keys` names it (and, for fssl's snake_case or Flower's older `fraction-fit`, the key to use): the
`python -m fssl_core flower` command calls it before it submits. No Flower import here: the check costs no
Flower start-up.
"""
from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Mapping

from ..config import ConfigError, SharedFields, settings_of

# RunConfig field -> Flower's name for it, where Flower's apps have one; every other field is kebab-cased
FLOWER_NAMES = {"rounds": "num-server-rounds", "clients_per_round": "fraction-train"}
# the app's keys beyond RunConfig's, with their defaults: the run store ("" for $FSSL_RUNS or ./runs, relative
# to where the SuperLink started), progress lines, MLflow while training ("": not tracked), and the submitting
# checkout's fssl_core ("version:code digest", which `python -m fssl_core flower` passes; "": not checked)
APP_OPTIONS = {"runs": "", "progress": True, "track-uri": "", "track-experiment": "fssl", "fssl-code": ""}
# names a Flower user may type for a key of this app (older Flower, other templates)
ALIASES = {"fraction-fit": "fraction-train", "learning-rate": "lr", "num-rounds": "num-server-rounds"}
# the first words of the ServerApp's failure for a refused config and for a recorded run that is no result, which
# Flower keeps as the run's status details and `python -m fssl_core flower` reads (flower_submit.py)
REFUSED, NOT_A_RESULT = "fssl refused: ", "fssl not a result: "
FRACTION_TOLERANCE = 1e-6     # 0.1 × 100 is 10.000000000000002 in floats


@functools.cache
def code_digest() -> str:
    """sha256 of fssl_core's Python source (each file's path and bytes, in path order): what the submitting
    checkout, the ServerApp and every node must share, as the app's own files (Flower's FAB hash) do not cover
    the package it names."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def app_key(field: str) -> str:
    return FLOWER_NAMES.get(field, field.replace("_", "-"))


_FIELD_OF = {key: field for field, key in FLOWER_NAMES.items()}


def field_of(key: str) -> str:
    return _FIELD_OF.get(key, key.replace("-", "_"))


def app_defaults() -> dict[str, Any]:
    """Every key of the app's run config with its default (flower-app/pyproject.toml lists these; a test keeps
    them equal): RunConfig's defaults under the app's keys, then APP_OPTIONS."""
    from ..run_config import RunConfig      # torch, kept off `flower --help` (it imports this module)
    fields = RunConfig().to_dict()
    out = {app_key(k): v for k, v in fields.items()}
    out["fraction-train"] = fields["clients_per_round"] / fields["clients"]
    return {**out, **APP_OPTIONS}


def check_keys(keys, known: Mapping[str, Any] | None = None) -> None:
    """Refuse, in one line, the keys that are not the app's, each with the key to use where there is one."""
    known = app_defaults() if known is None else known
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ConfigError("Flower run config: " + "; ".join(f"{k}: {_hint(k, known)}" for k in unknown))


def _hint(key: str, known: Mapping[str, Any]) -> str:
    if key in ALIASES:
        return f"not a key of this app; it is {ALIASES[key]!r} here"
    ours = app_key(key.replace("-", "_"))       # fssl's field, snake- or kebab-case, under the app's key
    if ours in known and ours != key:
        return f"not a key of this app; it is {ours!r} here" + (
            " (Flower's keys are kebab-case)" if "_" in key else f" ({_meaning(ours)})")
    close = difflib.get_close_matches(key, list(known), n=1)
    return "not a key of this app" + (f"; did you mean {close[0]!r}?" if close else
                                      " (flower-app/pyproject.toml lists its keys)")


def _meaning(key: str) -> str:
    return {"fraction-train": "the share of `clients` sampled a round, as Flower's strategies take it",
            "num-server-rounds": "Flower's name for the rounds"}.get(key, "Flower's name")


def run_config_of(app_config: Mapping[str, Any]):
    """The RunConfig that a Flower run config names (the app's defaults fused with `--run-config`), and the app's
    options (APP_OPTIONS' keys). A value equal to RunConfig's default is left to RunConfig, whose defaults may
    follow other fields (the network follows the data set): every key arrives, changed or not."""
    from ..run_config import RunConfig      # as app_defaults's
    check_keys(app_config)
    defaults = app_defaults()
    given = {field_of(k): v for k, v in app_config.items() if k not in APP_OPTIONS and v != defaults[k]}
    if "clients_per_round" in given or "clients" in given:
        given["clients_per_round"] = _clients_a_round(float(app_config.get("fraction-train", defaults["fraction-train"])),
                                                      int(app_config.get("clients", defaults["clients"])))
    try:
        cfg = RunConfig.from_dict(given)
    except ConfigError as err:
        raise ConfigError(in_app_keys(str(err))) from None
    return cfg, {k: app_config.get(k, v) for k, v in APP_OPTIONS.items()}


def in_app_keys(message: str) -> str:
    """RunConfig's refusal with the keys the user typed: `RunConfig.rounds=-1` -> `Flower run config:
    num-server-rounds=-1` (the fields a message names are written `field=value`)."""
    from ..run_config import RunConfig      # as app_defaults's
    names = "|".join(sorted(RunConfig().to_dict(), key=len, reverse=True))
    message = re.sub(rf"\b({names})=", lambda m: f"{app_key(m.group(1))}=", message)
    return "Flower run config: " + message.removeprefix("RunConfig.")


def app_overrides(cfg) -> str:
    """`cfg` as a `--run-config` value: its fields that differ from RunConfig's defaults, under the app's keys
    (`clients_per_round` as fraction-train), which `run_config_of` reads back to `cfg`."""
    from ..run_config import RunConfig      # as app_defaults's
    defaults, fields = RunConfig().to_dict(), cfg.to_dict()
    given = {app_key(k): v for k, v in fields.items() if v != defaults[k] and k != "clients_per_round"}
    if fields["clients_per_round"] != defaults["clients_per_round"] or fields["clients"] != defaults["clients"]:
        given["fraction-train"] = fields["clients_per_round"] / fields["clients"]
    return " ".join(f"{k}={json.dumps(v)}" for k, v in given.items())


def _clients_a_round(fraction: float, clients: int) -> int:
    count = fraction * clients
    if not 0 < fraction <= 1 or abs(count - round(count)) > FRACTION_TOLERANCE:
        raise ConfigError(f"Flower run config: fraction-train={fraction} with clients={clients}: must be within "
                          f"(0, 1] and a whole number of clients a round (fraction-train × clients = {count:g}); "
                          f"e.g. fraction-train={max(1, round(count)) / clients:g}")
    return round(count)


# --- the app's pyproject ----------------------------------------------------------------------------------
CONFIG_HEADER = """\
# The run, in Flower's keys (fssl_core/integrations/flower_keys.py, which writes this section:
# python -m fssl_core.integrations.flower_keys; tests/test_flower.py keeps it equal to RunConfig's defaults):
# num-server-rounds, fraction-train (the share of `clients` sampled a round), local-epochs, lr, batch-size as
# Flower's apps name them, every other RunConfig field in kebab-case. Override any with --run-config;
# `python -m fssl_core flower` checks the keys, submits, waits and exits as `run` does.
[tool.flwr.app.config]
runs = ""                # the run store: "" for $FSSL_RUNS or ./runs (relative to where the SuperLink started)
progress = true
track-uri = ""           # MLflow while training (fssl_core/integrations/mlflow_track.py): a tracking URI; "": none
track-experiment = "fssl"
fssl-code = ""           # the submitting checkout's fssl_core, "version:digest" (python -m fssl_core flower passes it)
"""


def app_config_section() -> str:
    """The app pyproject's [tool.flwr.app.config]: APP_OPTIONS, the shared fields, then the partitions' parameters
    and the algorithms' settings (as registered), each at its default."""
    shared, defaults = set(settings_of(SharedFields)), app_defaults()
    keys = [k for k in defaults if k not in APP_OPTIONS]

    def line(key: str) -> str:
        value = defaults[key]
        return f"{key} = {json.dumps(value) if isinstance(value, (bool, str)) else repr(value)}"
    return (CONFIG_HEADER + "\n".join(line(k) for k in keys if field_of(k) in shared)
            + "\n# the partitions' parameters and the algorithms' settings (each read only by the partitions or methods that declare it)\n"
            + "\n".join(line(k) for k in keys if field_of(k) not in shared) + "\n")


def write_app_config(pyproject) -> None:
    """Rewrite the app config section (the file's last) of the app's pyproject.toml in place."""
    path = Path(pyproject)
    text = path.read_text()
    path.write_text(text[:text.index(CONFIG_HEADER.splitlines()[0])] + app_config_section())


if __name__ == "__main__":
    from pathlib import Path
    write_app_config(Path(__file__).resolve().parents[2] / "flower-app" / "pyproject.toml")
