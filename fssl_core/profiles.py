"""Run profiles: how much of a paper's protocol a notebook runs.

- smoke: seconds; checks the wiring only (nbval runs every notebook at this profile).
- headline: the default main job: quick's protocol on each paper's headline cells only, so a
  2-core CPU answers each paper's headline question in under half an hour (its runs are quick's
  runs, shared with a later quick reproduction through the run store).
- quick: minutes on a 2-core CPU for MNIST-class data; fewer seeds, the cell's own reductions
  (e.g. one local epoch) and, by default, a slice of what a table sweeps (`scope`). Every row it
  produces is labeled "reduced".
- paper: the paper's settings: its rounds, clients and number of seeds.

The main job's profile is its --profile flag, else $FSSL_PROFILE, else headline (`job_profile`); a notebook
run alone takes its `profile` parameter, which $FSSL_PROFILE overrides (`get_profile`; the test suite sets
smoke). The job sets $FSSL_PROFILE to its own profile while it runs, so both readings agree.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import ConfigError

if TYPE_CHECKING:      # only for annotations: the CLI's --help reads PROFILES without importing torch
    from .run_config import RunConfig

REDUCED, OK = "reduced", "ok"


@dataclass(frozen=True)
class Profile:
    name: str
    max_seeds: int | None                 # how many of the paper's seeds to run; None: all of them
    overrides: dict[str, Any] = field(default_factory=dict)   # forced on every config
    status: str = REDUCED                 # what its report rows say about their protocol
    protocol: str = "quick"               # whose settings a cell runs: "quick" (the cell's reductions) or "paper"

    def seeds(self, paper_seeds: list[int]) -> list[int]:
        return list(paper_seeds if self.max_seeds is None else paper_seeds[:self.max_seeds])

    def configs(self, paper_config: RunConfig, paper_seeds: list[int],
                quick: dict[str, Any] | None = None, every_seed: bool = False) -> tuple[RunConfig, ...]:
        """The configs this profile runs for one table cell; `quick` are the cell's own reductions,
        applied by the quick profile and, under its own overrides, by smoke (a smoke run is a
        shortened quick run, e.g. never the paper's large model on a CPU). `every_seed`: all of
        `paper_seeds`, past the profile's share (a notebook's explicit `seeds`, e.g. three seeds
        behind a claim at a reduced protocol)."""
        changes = dict(quick or {}) if self.protocol == "quick" else {}
        changes.update(self.overrides)
        seeds = list(paper_seeds) if every_seed else self.seeds(paper_seeds)
        return tuple(paper_config.replace(seed=s, **changes) for s in seeds)

    def scope(self, full, quick, smoke=None, headline=None) -> list:
        """What a table sweeps when the notebook leaves it to the profile: the paper's whole list,
        at quick the slice whose cells a 2-core CPU affords (for FedSiam: every MNIST cell), at smoke
        the `smoke` slice when given (CI runs every notebook at smoke; a few cells check the wiring),
        at headline the `headline` slice when given (the cells of the paper's headline claim);
        else the quick one. A notebook parameter set to a list overrides it."""
        if self.name == "paper":
            return list(full)
        own = {"smoke": smoke, "headline": headline}.get(self.name)
        return list(quick if own is None else own)

    def at_paper_protocol(self) -> "Profile":
        """The profile of a notebook's paper-protocol checks: the paper's, except under smoke, which
        shortens every run it starts (one knob: `--profile smoke` never trains a paper-length run)."""
        return self if self.name == "smoke" else PROFILES["paper"]


PROFILES = {
    "smoke": Profile("smoke", max_seeds=1,
                     overrides={"rounds": 2, "clients_per_round": 2, "local_epochs": 1}),
    "headline": Profile("headline", max_seeds=1),
    "quick": Profile("quick", max_seeds=1),
    "paper": Profile("paper", max_seeds=None, status=OK, protocol="paper"),
}


PROFILE_ENV = "FSSL_PROFILE"
DEFAULT_JOB_PROFILE = "headline"


def get_profile(name: str) -> Profile:
    """The named profile; $FSSL_PROFILE, when set, overrides the notebook's choice (CI sets smoke for the
    notebooks nbval runs; the main job sets it to its own profile, `job_profile`, so its kernels agree)."""
    return _named(os.environ.get(PROFILE_ENV, name), f"${PROFILE_ENV}" if PROFILE_ENV in os.environ else "profile")


def job_profile(flag: str | None) -> tuple[Profile, str]:
    """The main job's profile, decided here once: the --profile flag, else $FSSL_PROFILE, else headline;
    and where it came from, for the job's header (an environment variable never overrides a flag)."""
    env = os.environ.get(PROFILE_ENV)
    if flag is not None:
        ignored = f"; ${PROFILE_ENV}={env} ignored" if env is not None and env != flag else ""
        return _named(flag, "--profile"), f"--profile{ignored}"
    if env is not None:
        return _named(env, f"${PROFILE_ENV}"), f"${PROFILE_ENV}"
    return PROFILES[DEFAULT_JOB_PROFILE], "the default"


def _named(name: str, source: str) -> Profile:
    if name not in PROFILES:
        raise ConfigError(f"{source}={name!r}: must be one of {', '.join(PROFILES)}")
    return PROFILES[name]
