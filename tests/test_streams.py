"""A cohort's draws made for all its clients at once (data/streams.py, learning/batches.CohortBatches) are, bit for
bit, the draws each client's own generator gives torch's calls in the same order, and the generators end where
those calls leave them: the words of torch's mt19937 and its CPU kernels' use of them, checked here."""
import numpy as np
import pytest
import torch

from fssl_core.data.augment import AugmentSpec, draw_strong, draw_weak
from fssl_core.data.streams import MAX_RANGE, CohortDraws, CohortStreams
from fssl_core.learning.batches import CohortBatches, DataView, Plan, TrainImages, batches


def generators(seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


# (kind, arguments): a mix of calls, long enough to cross mt19937's 624-word blocks and the streams' windows
CALLS = [("randint", (0, 5, (2, 7, 1))), ("rand", ((7,),)), ("randperm", (60,)), ("randint", (1, 11, (2, 3))),
         ("bernoulli", ((4, 3), 0.7, torch.float32)), ("rand", ((2, 3),)), ("randint", (0, MAX_RANGE, (5,))),
         ("randperm", (1,)), ("bernoulli", ((9,), 0.5, torch.float16)), ("randint", (8, 17, (900, 1))),
         ("bernoulli", ((3, 2, 1, 1), 0.3, torch.bfloat16)), ("randperm", (541,)), ("rand", ((3000,),)),
         ("randint", (0, 29, (40, 1)))]


def torch_call(kind, args, generator):
    if kind == "randint":
        return torch.randint(*args, generator=generator)
    if kind == "rand":
        return torch.rand(*args, generator=generator)
    if kind == "bernoulli":
        shape, p, dtype = args
        return torch.bernoulli(torch.full(shape, p, dtype=dtype), generator=generator)
    return torch.randperm(*args, generator=generator)


def cohort_call(kind, args, streams, clients):
    if kind == "randperm":
        return torch.stack([streams.randperm(c, *args) for c in clients])
    return getattr(CohortDraws(streams, streams.rows(np.array(clients))), kind)(*args)


@pytest.mark.parametrize("clients", [[0, 1, 2], [0, 2], [1]], ids=["all", "apart", "one"])
def test_every_draw_equals_each_clients_own_generator_in_the_same_order(clients):
    seeds = (3, 2**40 + 7, 11)
    ours, theirs = generators(seeds), generators(seeds)
    for g in ours + theirs:                  # the generators stand mid-block, each elsewhere
        torch.rand(int(g.initial_seed() % 700), generator=g)
    streams = CohortStreams(ours, "cpu")
    for round_ in range(2):
        for kind, args in CALLS:
            got = cohort_call(kind, args, streams, clients)
            for row, c in enumerate(clients):
                want = torch_call(kind, args, theirs[c])
                assert got[row].dtype == want.dtype and torch.equal(got[row], want), (kind, args, c)
        streams.randperm(clients[0], 300)     # one client apart: the clients' cursors part
        torch.randperm(300, generator=theirs[clients[0]])
    streams.finish()
    for c in range(3):
        assert torch.equal(ours[c].get_state(), theirs[c].get_state()), c


def test_a_range_wider_than_one_word_and_a_float64_uniform_are_refused():
    draws = CohortDraws(streams := CohortStreams(generators([1]), "cpu"), streams.rows(np.array([0])))
    with pytest.raises(ValueError, match="range"):
        draws.randint(0, MAX_RANGE + 1, (2,))
    with pytest.raises(ValueError, match="float64"):
        draws.bernoulli((2,), 0.5, torch.float64)


@pytest.mark.parametrize("spec", [AugmentSpec(flip=True, pad=4), AugmentSpec(flip=False, pad=0, jitter=False)])
def test_the_augmentations_draws_equal_each_clients_own(spec):
    ours, theirs = generators((5, 6)), generators((5, 6))
    streams = CohortStreams(ours, "cpu")
    draws = CohortDraws(streams, streams.rows(np.arange(2)))
    got = [draw_weak(6, 3, draws, spec), draw_strong(6, (32, 32), draws, spec), draw_strong(6, (32, 32), draws, spec,
                                                                                            magnitude=0)]
    for c in range(2):
        want = [draw_weak(6, 3, theirs[c], spec), draw_strong(6, (32, 32), theirs[c], spec),
                draw_strong(6, (32, 32), theirs[c], spec, magnitude=0)]
        for a, b in zip(got, want):
            assert a.keys() == b.keys() and all(torch.equal(a[k][c], b[k]) for k in a), c


def test_the_cohorts_index_streams_equal_each_clients_batches_step_by_step():
    """Sets of unequal sizes (none, one sample, shorter than a batch), both epoch_over settings (the cycled set's
    chunks run past a pass's end, a batch longer than the set past two), and draws between the steps (a loss's)."""
    images = TrainImages(torch.rand(200, 1, 2, 2), torch.arange(200), lambda t: t, AugmentSpec(flip=False, pad=0))
    sizes = [(7, 33), (1, 12), (0, 9), (12, 3), (7, 33), (5, 0)]
    views, start = [], 0
    for labeled, unlabeled in sizes:
        middle, end = start + labeled, start + labeled + unlabeled
        views.append(DataView(torch.arange(start, middle), torch.arange(middle, end)))
        start = end
    plans = [Plan(2, 3, 5), Plan(3, 2, 4), Plan(1, 2, 10, "unlabeled"), Plan(2, 3, 7), Plan(2, 3, 5, "unlabeled"),
             Plan(1, 4, 5)]
    seeds = range(20, 20 + len(views))
    theirs = generators(seeds)
    own = [batches(images, v, p, g) for v, p, g in zip(views, plans, theirs)]
    streams = CohortStreams(generators(seeds), "cpu")
    walk = CohortBatches(views, plans, streams)
    steps = np.array([p.steps(v) for p, v in zip(plans, views)])
    assert len(set(steps.tolist())) > 2
    for i in range(int(steps.max())):
        active = np.flatnonzero(steps > i)
        labeled, unlabeled = walk.next(active)
        for row, c in enumerate(active.tolist()):
            batch = next(own[c])
            idx_l, idx_u = walk.indices(streams.rows(np.array([c])))
            assert (labeled[row], unlabeled[row]) == (len(batch.labeled), len(batch.unlabeled)), (i, c)
            assert torch.equal(idx_l[0], batch.labeled.idx) and torch.equal(idx_u[0], batch.unlabeled.idx), (i, c)
            torch.rand(3, generator=theirs[c])           # the loss's draws between steps
        CohortDraws(streams, streams.rows(active)).rand((3,))
    streams.finish()
    assert all(torch.equal(a.get_state(), b.get_state()) for a, b in zip(streams.generators, theirs))
