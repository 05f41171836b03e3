"""Every random draw of a round is made on a CPU generator of the (seed, round, party) streams.

That is what makes a run's draws the same on every device and in both trainers: a CUDA generator
draws another stream than the CPU's (Philox, not mt19937), and one batched CUDA draw is not the
concatenation of per-client draws, so a draw made on the GPU ties the numbers to the device and the
trainer (on an H200, FedFixMatch's and FedCon's cohort and sequential rounds differed by 4e-3 and
5e-3 with every other source of difference turned off: they draw strong augmentations). The test
watches every torch call of whole rounds, for every algorithm, both trainers, the network with
dropout and FedAnchor's mixup at the server: a random function called without a CPU generator (so
on a device generator, or on torch's global one, which no checkpoint holds) fails it.
"""
import pytest
import torch
from torch.overrides import TorchFunctionMode

from fssl_core.algorithms import ALGORITHMS
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import Federation

from .conftest import requires_mnist

RANDOM = {"rand", "randn", "randint", "randperm", "bernoulli", "normal", "multinomial", "poisson",
          "rand_like", "randn_like", "randint_like", "uniform_", "normal_", "random_", "bernoulli_",
          "exponential_", "geometric_", "cauchy_", "log_normal_", "rrelu"}
DROPOUT = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"}

# small: two rounds of two clients of 50 samples each, 100 labeled at the server (the watch costs a
# Python call per torch op)
CLIENT = dict(dataset="mnist", partition="noniid3", labeled_ratio=0.1, clients=1200, rich_clients=120,
              clients_per_round=2, rounds=2, local_epochs=1, batch_size=10, seed=13)
SERVER = dict(CLIENT, partition="server_dirichlet", rich_clients=10, server_labeled=100, dirichlet_alpha=10.0)
EXTRA = {   # what makes each algorithm draw everything it can in two rounds
    "fedsem": {"fedsem_phase1_fraction": 0.5},
    "fedanchor": {"projection_dim": 16, "pretrain_epochs": 1, "server_mixup": True, "partition": "server_lda",
                  "dirichlet_alpha": 0.5},
    "semifl": {"partition": "server_lda", "dirichlet_alpha": 0.5},
    "supervised_fl": {"partition": "server_lda", "dirichlet_alpha": 0.5},
}


class RecordDraws(TorchFunctionMode):
    """Collects every random torch call that does not draw from a CPU torch.Generator."""

    def __init__(self):
        super().__init__()
        self.offending: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if name in RANDOM:
            generator = kwargs.get("generator")
            if not (isinstance(generator, torch.Generator) and generator.device.type == "cpu"):
                self.offending.append(f"{name} (generator={getattr(generator, 'device', None)})")
        elif name in DROPOUT and kwargs.get("training", args[2] if len(args) > 2 else True):
            self.offending.append(f"{name} (torch's global generator)")
        return func(*args, **kwargs)


def configurations():
    for name, cls in ALGORITHMS.items():
        base = SERVER if "client" not in cls.labels_at else CLIENT
        trainers = ("sequential", "cohort") if cls.cohort else ("sequential",)
        for trainer in trainers:
            yield pytest.param(dict(base, algorithm=name, trainer=trainer, **EXTRA.get(name, {})),
                               id=f"{name}-{trainer}")
    for trainer in ("sequential", "cohort"):   # dropout masks: the authors' MNIST network
        yield pytest.param(dict(CLIENT, algorithm="fedsiam_d", model="cnn_mnist_authors", trainer=trainer),
                           id=f"fedsiam_d-authors-network-{trainer}")


@requires_mnist
@pytest.mark.parametrize("settings", list(configurations()))
def test_every_draw_of_a_round_is_made_on_a_cpu_generator(settings):
    fed = Federation.build(RunConfig(**settings))
    state = fed.initial_state()
    with RecordDraws() as mode:
        for r in (1, 2):
            state, _ = fed.run_round(state, r)
    assert mode.offending == [], sorted(set(mode.offending))


def test_the_watch_catches_a_draw_on_the_global_or_a_missing_cpu_generator():
    with RecordDraws() as mode:
        torch.rand(3, generator=torch.Generator())
        torch.randperm(4)
        torch.nn.functional.dropout(torch.ones(3), 0.5, training=True)
        torch.nn.functional.dropout(torch.ones(3), 0.5, training=False)
    assert mode.offending == ["randperm (generator=None)", "dropout (torch's global generator)"]


def test_the_party_stream_is_a_cpu_generator_whatever_the_run_device():
    # a CUDA run cannot be built here; the stream's device must not follow the run's in any case
    fed = Federation.build(RunConfig(dataset="synthetic_cifar10", model="cnn_cifar", clients=10, clients_per_round=2))
    assert fed.generator(1, 0).device.type == "cpu"
    assert torch.equal(torch.rand(5, generator=fed.generator(3, 7)), torch.rand(5, generator=fed.generator(3, 7)))
