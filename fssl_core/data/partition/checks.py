"""Argument checks: every error names the partition, the parameter, its value and what is allowed."""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np


class PartitionError(ValueError):
    """Arguments a partition cannot use, or data it cannot split as asked; the message names the
    partition, the argument, its value and what is allowed."""


class DirichletDrawError(PartitionError):
    """No Dirichlet draw in MAX_DIRICHLET_DRAWS met the min_client_size rule: the arguments are valid,
    but this (μ, number of clients, data, seed) cannot be split; the explorer catches exactly this."""



def where_of(name) -> str:
    return f"partition '{name}'"


def check_labels(name, labels, num_classes, where=None) -> np.ndarray:
    where = where or where_of(name)
    if not isinstance(num_classes, Integral) or isinstance(num_classes, bool) or num_classes < 1:
        raise PartitionError(f'{where}: num_classes={num_classes!r} must be an int >= 1')
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise PartitionError(f'{where}: labels must be a non-empty 1-D integer array; got shape '
                         f'{labels.shape} and dtype {labels.dtype}')
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= num_classes:
        raise PartitionError(f'{where}: labels must lie within [0, num_classes - 1] = '
                         f'[0, {num_classes - 1}]; found values in [{low}, {high}]')
    return labels.astype(np.int64, copy=False)


def check_clients(name, num_clients, num_samples):
    check_int(where_of(name), 'num_clients', num_clients, 1, num_samples, ' (the number of samples)')


def check_int(where, param, value, low, high=None, note=''):
    """value must be an int within [low, high] (high=None: no upper bound); note explains high."""
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise PartitionError(f'{where}: {param}={value!r} must be an int')
    if value < low or (high is not None and value > high):
        allowed = f'>= {low}' if high is None else f'within [{low}, {high}]'
        raise PartitionError(f'{where}: {param}={value!r} must be an int {allowed}{note}')


def check_fraction(name, param, value, closed=False):
    ok = isinstance(value, Real) and not isinstance(value, bool) and np.isfinite(value) and \
        ((0 <= value <= 1) if closed else (0 < value < 1))
    if not ok:
        interval = '[0, 1]' if closed else '(0, 1)'
        raise PartitionError(f"{where_of(name)}: {param}={value!r} must be a number within {interval}")


def check_alpha(name, alpha):
    if not isinstance(alpha, Real) or isinstance(alpha, bool) or not np.isfinite(alpha) or alpha <= 0:
        raise PartitionError(f"{where_of(name)}: dirichlet_alpha={alpha!r} must be a finite number > 0")


def check_bool(name, param, value):
    if not isinstance(value, (bool, np.bool_)):
        raise PartitionError(f"{where_of(name)}: {param}={value!r} must be True or False")


def check_stream_parts(name, stream_parts):
    check_int(where_of(name), 'stream_parts', stream_parts, 1)


def check_shards(name, per_client, num_clients, num_samples):
    check_int(where_of(name), 'classes_per_client', per_client, 1, num_samples // num_clients,
               ' (samples // num_clients, so that no shard is empty)')


def seeded_rng(where, seed) -> np.random.Generator:
    if not isinstance(seed, Integral) or isinstance(seed, bool) or seed < 0:
        raise PartitionError(f'{where}: seed={seed!r} must be an int >= 0')
    return np.random.default_rng(int(seed))

