"""Train/test resplits at the dataset level (FedMix's 64,000 / 2,000 Fashion-MNIST and 56,000 /
2,000 CIFAR-10 sets)."""
from __future__ import annotations

import numpy as np

from .checks import PartitionError, check_int, seeded_rng
from .constructions import spread_evenly


def resplit_train_test(num_train: int, num_test: int, seed: int, *, train_size: int, test_size: int,
                       labels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Draw new train and test sets from the pooled official splits.

    Index space: [0, num_train + num_test), the official training set followed by the official
    test set. Returns (train_idx, test_idx), sorted, disjoint; the other
    num_train + num_test − train_size − test_size indices are used by neither.
    labels=None: uniform random without replacement. labels given (length num_train + num_test,
    the pooled labels): class-stratified, train_size / C and test_size / C per class (remainders
    to randomly chosen classes), C = the number of distinct labels.

    Reading. The FedMix journal (fedmix-fedloss-zh.txt line 233): "使用包括64 000个训练样本和2 000个测试样本的
    Fashion-MNIST数据集作为验证数据集" (a Fashion-MNIST dataset of 64,000 training and 2,000 test samples).
    Fashion-MNIST has 60,000 + 10,000 images, so some training images must come from the official test
    set; nothing says which, or what happens to the other 4,000 (left out here). The conference paper
    does the same with CIFAR-10: "56,000 training samples and 2,000 test samples" (fedmix-fedfreq.txt
    line 197). Choice: pool both splits and draw without replacement, stratified by class (`labels`),
    which the CIFAR-10 numbers imply: "550 samples for each client (i.e., 55 for each class)" with 100
    labeled per class needs exactly 5,600 training images of every class. Fashion-MNIST: 6,400 train
    and 200 test per class.
    """
    who = 'resplit_train_test'
    for param, value in (('num_train', num_train), ('num_test', num_test)):
        check_int(who, param, value, 0)
    total = num_train + num_test
    check_int(who, 'train_size', train_size, 1, total - 1, ' (num_train + num_test - 1)')
    check_int(who, 'test_size', test_size, 1, total - train_size,
               ' (num_train + num_test - train_size)')
    rng = seeded_rng(who, seed)
    if labels is None:
        order = rng.permutation(total)
        return (np.sort(order[:train_size]).astype(np.int64),
                np.sort(order[train_size:train_size + test_size]).astype(np.int64))
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size != total or not np.issubdtype(labels.dtype, np.integer):
        raise PartitionError(f'{who}: labels must be a 1-D integer array of length num_train + num_test '
                         f'= {total}; got shape {labels.shape} and dtype {labels.dtype}')
    classes, available = np.unique(labels, return_counts=True)
    train_quota = spread_evenly(train_size, classes.size, rng)
    test_quota = spread_evenly(test_size, classes.size, rng)
    short = np.flatnonzero(train_quota + test_quota > available)
    if short.size:
        c = short[0]
        raise PartitionError(f'{who}: train_size={train_size} and test_size={test_size} stratified '
                         f'over {classes.size} classes need {train_quota[c] + test_quota[c]} '
                         f'samples of class {classes[c]}, but labels has {available[c]}')
    train, test = [], []
    for c, n_train, n_test in zip(classes, train_quota, test_quota):
        members = rng.permutation(np.flatnonzero(labels == c))
        train.append(members[:n_train])
        test.append(members[n_train:n_train + n_test])
    return np.sort(np.concatenate(train)).astype(np.int64), np.sort(np.concatenate(test)).astype(np.int64)


