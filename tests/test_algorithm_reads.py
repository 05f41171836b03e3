"""An algorithm's setting that the run's algorithm does not read is refused, and left out of the identity: what
each algorithm declares it reads (Algorithm.reads) covers what a short run of it reads, a setting outside it
changes no number (so a shared dict may drop it: RunConfig.dropping_unread, the same id), and one inside it
changes the id."""
import sys

import pytest
import torch

from fssl_core.algorithms import ALGORITHMS, algorithm_settings, ignored_settings
from fssl_core.config import ConfigError
from fssl_core.run_config import RunConfig, field_types
from fssl_core.engine.federation import Federation

from .conftest import requires_mnist

OWNED = frozenset(algorithm_settings())
FIELDS = frozenset(field_types())
SMALL = dict(dataset="mnist", clients=10, clients_per_round=2, local_epochs=1, batch_size=10, resplit_train=1000,
             resplit_test=100, seed=3)
AT = {"client": dict(partition="noniid1", labeled_ratio=0.2),
      "server": dict(partition="server_dirichlet", server_labeled=100, dirichlet_alpha=1.0, server_balanced=True)}
# settings a short run only reaches with them on: each algorithm's path through them is then recorded too
EXTRA = {"fedanchor": dict(projection_dim=16, pretrain_epochs=1), "semifl": dict(pretrain_epochs=1),
         "supervised_fl": dict(pretrain_epochs=1), "fedsem": dict(fedsem_phase1_fraction=0.5),
         "fedfixmatch": dict(pretrain_epochs=1), "fedmatch": dict(momentum=0.0)}


def _config(algorithm: str, **changes) -> RunConfig:
    at = ALGORITHMS[algorithm].labels_at[-1]
    return RunConfig(**{**SMALL, **AT[at], "algorithm": algorithm, "rounds": 2, **EXTRA.get(algorithm, {}), **changes})


def _train(cfg: RunConfig) -> tuple[dict, list[dict]]:
    fed = Federation.build(cfg)
    state, rows = fed.initial_state(), []
    for r in range(1, cfg.rounds + 1):
        state, m = fed.run_round(state, r)
        rows.append({k: v for k, v in m.items() if "seconds" not in k and "time" not in k})
    return state, rows


def _reads_of_a_run(cfg: RunConfig) -> set[str]:
    """The RunConfig fields read while `cfg` builds and trains (run_config.py's own reads, which look at every
    field to validate and hash, not counted)."""
    seen: set[str] = set()
    plain = object.__getattribute__

    def recording(self, name):
        if name in FIELDS and not sys._getframe(1).f_code.co_filename.endswith(("run_config.py",)):
            seen.add(name)
        return plain(self, name)

    RunConfig.__getattribute__ = recording
    try:
        _train(cfg)
    finally:
        del RunConfig.__getattribute__
    return seen


@requires_mnist
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_what_a_run_reads_of_the_algorithms_settings_is_declared(algorithm):
    torch.set_num_threads(1)
    read = _reads_of_a_run(_config(algorithm)) & OWNED
    assert read, "the recording saw no setting read: it records nothing"
    assert read <= ALGORITHMS[algorithm].reads(), f"{algorithm} reads {sorted(read - ALGORITHMS[algorithm].reads())} undeclared"


def test_a_setting_the_algorithm_ignores_is_refused_or_dropped_and_one_it_reads_changes_the_id():
    fedavg = RunConfig(algorithm="fedavg")
    assert "tau_mu" in ignored_settings("fedavg") and "tau_mu" not in ignored_settings("fedsiam_d")
    with pytest.raises(ConfigError, match=r"^RunConfig.tau_mu=0.3, algorithm='fedavg': fedavg does not read tau_mu "
                                          r"\(read by fedsiam_d, fedsiam_pi, fedsiam_mt, fedsiam_nosiam\)"):
        RunConfig(algorithm="fedavg", tau_mu=0.3)
    assert RunConfig.dropping_unread(algorithm="fedavg", tau_mu=0.3).run_id == fedavg.run_id
    assert RunConfig.dropping_unread(algorithm="fedavg", pseudo_label_threshold=0.8, fedmatch_helpers=5) == fedavg
    assert RunConfig(algorithm="fedsiam_d", tau_mu=0.3).run_id != RunConfig(algorithm="fedsiam_d").run_id
    assert (RunConfig(algorithm="fedmatch", pseudo_label_threshold=0.8).run_id
            != RunConfig(algorithm="fedmatch").run_id)          # FedMatch reads FedFixMatch's T (reads_also)
    # the anchor head is built for whichever algorithm runs: its width is every run's
    semifl = dict(algorithm="semifl", partition="server_iid")
    assert RunConfig(**semifl, projection_dim=16).run_id != RunConfig(**semifl).run_id
    # a field outside the algorithms' settings (the data, the optimiser) is everybody's
    assert RunConfig(algorithm="fedavg", lr=0.02).run_id != fedavg.run_id


@requires_mnist
@pytest.mark.parametrize("algorithm, ignored", [("supervised_server", dict(pseudo_label_threshold=0.8)),
                                                ("fedavg", dict(tau_mu=0.3, fedmatch_lambda_l2=1.0, sharpen_temperature=1.0))])
def test_an_ignored_setting_changes_no_number(algorithm, ignored):
    torch.set_num_threads(1)
    plain, varied = _config(algorithm), _config(algorithm)
    varied.__dict__["_settings"].update(ignored)      # past the refusal: what the run would compute with them
    assert set(ignored) <= ignored_settings(algorithm) and plain.run_id == varied.run_id
    (state_a, rows_a), (state_b, rows_b) = _train(plain), _train(varied)
    assert rows_a == rows_b
    assert all(torch.equal(state_a["model"][k], state_b["model"][k]) for k in state_a["model"])
