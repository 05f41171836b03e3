"""The command-line options the studies share."""
from __future__ import annotations

from fssl_core.config import ConfigError
from fssl_core.run_config import RunConfig, field_types


def parse_set(pairs: list[str]) -> dict:
    """`--set key=value` arguments as RunConfig field values; a pair without '=', an unknown field or a value of
    the wrong type is one ConfigError line."""
    bad = [pair for pair in pairs if "=" not in pair or pair.split("=", 1)[0] not in field_types()]
    if bad:
        raise ConfigError(f"{bad[0]}: must be key=value with a RunConfig field as key")
    return RunConfig.values_from_strings(dict(pair.split("=", 1) for pair in pairs))
