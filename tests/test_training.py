import pytest
import torch
from torch import nn

from fssl_core.learning.batches import Batch, DataView, Plan, TrainImages, batches
from fssl_core.data.augment import AugmentSpec
from fssl_core.learning.training import SGD


def test_sgd_matches_torch_optim_sgd_with_momentum_and_weight_decay():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    ours = [p.detach().clone() for p in model.parameters()]
    reference = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2)
    sgd, velocity = SGD(lr=0.1, momentum=0.9, weight_decay=1e-2), None
    for step in range(4):
        x = torch.randn(5, 3)
        reference.zero_grad()
        model(x).pow(2).sum().backward()
        reference.step()
        leaves = [p.requires_grad_() for p in ours]
        out = torch.func.functional_call(model, {"weight": leaves[0], "bias": leaves[1]}, (x,))
        velocity = sgd.step(leaves, list(torch.autograd.grad(out.pow(2).sum(), leaves)), velocity)
        for p in leaves:
            p.requires_grad_(False)
    for mine, theirs in zip(ours, model.parameters()):
        torch.testing.assert_close(mine, theirs.detach())


def _images(n: int) -> TrainImages:
    x = torch.rand(n, 1, 4, 4)
    return TrainImages(x, torch.arange(n) % 10, lambda t: t, AugmentSpec(flip=False, pad=0))


def test_each_epoch_over_labeled_visits_every_labeled_sample_once_and_cycles_unlabeled():
    images = _images(40)
    view = DataView(labeled=torch.arange(0, 7), unlabeled=torch.arange(7, 40))
    plan = Plan(epochs=2, labeled_batch=3, unlabeled_batch=5)
    steps = list(batches(images, view, plan, torch.Generator().manual_seed(0)))
    assert len(steps) == plan.steps(view) == 2 * 3                       # ceil(7/3) = 3 per epoch
    assert [len(b.labeled) for b in steps] == [3, 3, 1, 3, 3, 1]          # short last batch, as drop_last=False
    for epoch in (steps[:3], steps[3:]):
        seen = torch.cat([b.labeled.idx for b in epoch])
        assert sorted(seen.tolist()) == list(range(7))
    assert all(len(b.unlabeled) == 5 for b in steps)                      # the other set is cycled
    drawn = torch.cat([b.unlabeled.idx for b in steps]).tolist()         # 30 of the 33: one pass, no repeats
    assert len(set(drawn)) == 30 and set(drawn) <= set(range(7, 40))


def test_same_generator_seed_gives_the_same_batches():
    images, view = _images(20), DataView(torch.arange(20), torch.arange(0))
    plan = Plan(epochs=1, labeled_batch=4)
    a = [b.labeled.idx for b in batches(images, view, plan, torch.Generator().manual_seed(3))]
    b = [b.labeled.idx for b in batches(images, view, plan, torch.Generator().manual_seed(3))]
    c = [b.labeled.idx for b in batches(images, view, plan, torch.Generator().manual_seed(4))]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


def test_no_labeled_data_means_no_steps_for_a_labeled_plan():
    view = DataView(torch.arange(0), torch.arange(10))
    assert Plan(epochs=5, labeled_batch=10).steps(view) == 0


def _parts(images: TrainImages, clients: int, seed: int):
    """Each client's first batch (labeled 2, unlabeled 5) from its own generator."""
    view = DataView(labeled=torch.arange(0, 6), unlabeled=torch.arange(6, 40))
    plan = Plan(epochs=1, labeled_batch=2, unlabeled_batch=5)
    return [next(batches(images, view, plan, torch.Generator().manual_seed(seed + c))) for c in range(clients)]


def test_a_cohorts_views_made_together_equal_each_clients_views_asked_one_after_the_other():
    # the cohort trainer draws every requested view of every client (each from its own stream, in the order
    # asked) and augments each kind in one call: the same floats as BatchPart's, view by view
    import numpy as np

    from fssl_core.algorithms.fedmix import SHIFT
    from fssl_core.data.streams import CohortDraws, CohortStreams
    from fssl_core.learning.batches import CohortBatches
    from fssl_core.learning.cohort import _CohortPart, _make_views
    torch.manual_seed(0)
    images = TrainImages(torch.rand(40, 1, 28, 28), torch.arange(40) % 10, lambda t: (t - 0.1) / 0.3,
                         AugmentSpec(flip=True, pad=2))
    requests = (("unlabeled", "strong"), ("labeled", "weak"), ("unlabeled", "weak"), ("labeled", "weak2"),
                ("labeled", "plain"), ("labeled", "weak"))                  # strong first: the order across kinds counts
    own = [b for b in _parts(images, 3, seed=5)]
    seen = [(Batch.views(b, *requests), b.unlabeled.transformed("shift", SHIFT)) for b in own]
    view = DataView(labeled=torch.arange(0, 6), unlabeled=torch.arange(6, 40))
    plan = Plan(epochs=1, labeled_batch=2, unlabeled_batch=5)
    streams = CohortStreams([torch.Generator().manual_seed(5 + c) for c in range(3)], "cpu")
    walk = CohortBatches([view] * 3, [plan] * 3, streams)
    walk.next(np.arange(3))
    rows = streams.rows(np.arange(3))
    draws = CohortDraws(streams, rows)
    cohort = dict(zip(("labeled", "unlabeled"), (_CohortPart(images, idx, draws) for idx in walk.indices(rows))))
    for part in cohort:
        assert all(torch.equal(cohort[part].idx[c], getattr(own[c], part).idx) for c in range(3))
    _make_views([(cohort[part], view) for part, view in requests])
    cohort["unlabeled"]._transform("shift", SHIFT)
    for i, (part, view) in enumerate(requests):
        stacked = cohort[part]._stacked[view]
        for c in range(3):
            assert torch.equal(stacked[c], seen[c][0][i]), (part, view, c)
    assert all(torch.equal(cohort["unlabeled"]._stacked["t:shift"][c], seen[c][1]) for c in range(3))
    # the same requests again draw nothing (the views made are kept), as BatchPart's cache
    cursor = streams.cursor.copy()
    _make_views([(cohort[part], view) for part, view in requests])
    assert np.array_equal(cursor, streams.cursor)
    # and the generators end where each client's own draws left its generator
    streams.finish()
    assert all(torch.equal(g.get_state(), b.labeled.generator.get_state()) for g, b in zip(streams.generators, own))


def test_batch_views_names_a_bad_request():
    images = _images(40)
    batch = _parts(images, 1, seed=0)[0]
    with pytest.raises(ValueError, match=r"request \('labeled', 'blurred'\)"):
        batch.views(("labeled", "blurred"))
    with pytest.raises(ValueError, match=r"request \('server', 'weak'\)"):
        batch.views(("server", "weak"))
