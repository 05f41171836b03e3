"""A toy executor for tests/test_executors.py: what adding an executor takes, one class implementing
the Executor protocol (registered by the test with a line in EXECUTORS)."""
from fssl_core.executors import Executor
from fssl_core.engine.trainer import train

TRAINED = []        # the configs every ToyExecutor was asked to train, in order


class ToyExecutor(Executor):
    """Trains each run in this process, one after the other, through the store."""

    def run(self, configs, store, job) -> None:
        for cfg in configs:
            TRAINED.append(cfg)
            job.finished(cfg, train(cfg, store, progress=False).summary)
