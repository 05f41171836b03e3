"""A run's test-set evaluation (Federation.test_metrics): the test set is normalised once and kept, and every
evaluation gives the floats the per-batch normalisation gave (a run's identity does not change with it); the test
batch size moves the test loss's last bits, so it is part of a run's identity."""
import pytest
import torch

from fssl_core.engine.federation import Federation
from fssl_core.run_config import RunConfig

from .conftest import requires_mnist


def _per_batch(fed: Federation, tensors) -> dict:
    """The evaluation as it was written before the test set was kept normalised: each batch normalised in turn."""
    correct, loss = torch.zeros((), dtype=torch.long), torch.zeros((), dtype=torch.float64)
    x, y = fed.data.test_x, fed.data.test_y
    with torch.no_grad():
        for i in range(0, len(y), 1024):
            logits = fed.ctx.apply(tensors, fed.data.normalize(x[i:i + 1024]), train=False)
            correct += (logits.argmax(1) == y[i:i + 1024]).sum()
            loss += torch.nn.functional.cross_entropy(logits.float(), y[i:i + 1024], reduction="sum").double()
    return {"accuracy": 100.0 * int(correct) / len(y), "test_loss": float(loss) / len(y)}


CFG = RunConfig(dataset="mnist", clients=10, clients_per_round=2, local_epochs=1, rounds=1, resplit_train=2000,
                resplit_test=1500)


def _after_one_round() -> tuple[Federation, dict]:
    """CFG's federation and the tensors its test set is evaluated with after one round."""
    fed = Federation.build(CFG)
    state, _ = fed.run_round(fed.initial_state(), 1)
    return fed, fed.algorithm.eval_tensors(state)


@requires_mnist
def test_evaluation_keeps_the_normalised_test_set_and_the_floats_of_normalising_per_batch():
    fed, tensors = _after_one_round()
    reference = _per_batch(fed, tensors)
    assert fed.test_metrics(tensors) == reference
    kept = fed._test_inputs
    assert kept is not None and torch.equal(kept, fed.data.normalize(fed.data.test_x))
    assert fed.test_metrics(tensors) == reference and fed._test_inputs is kept      # normalised once


@requires_mnist
def test_the_test_batch_size_moves_the_test_loss_so_it_is_in_the_run_identity():
    # the loss is summed in float32 a batch: other batches, other last bits (the accuracy counts alike); a run
    # with another eval_batch_size is another run, while the default keeps every stored id (tests/test_run_ids.py)
    cfg = CFG
    fed, tensors = _after_one_round()
    other = Federation.build(cfg.replace(eval_batch_size=100))
    ours, theirs = fed.test_metrics(tensors), other.test_metrics(tensors)
    assert ours["accuracy"] == theirs["accuracy"] and ours["test_loss"] != theirs["test_loss"]
    assert ours["test_loss"] == pytest.approx(theirs["test_loss"], rel=1e-6)
    assert cfg.replace(eval_batch_size=100).run_id != cfg.run_id
    assert cfg.replace(eval_batch_size=1024).run_id == cfg.run_id == RunConfig(**{
        k: v for k, v in cfg.to_dict().items() if k != "eval_batch_size"}).run_id
