"""Each data set's files as torchvision's classes read them, with their official MD5s: what `data.datasets` checks
every file against before it reads it (verify_files), and what a plan checks without torch (datasets.check_files)."""
from __future__ import annotations

from pathlib import Path

# MD5 of the (Fashion-)MNIST files torchvision reads: the files unzipped from the .gz downloads whose MD5s
# torchvision lists (tv.MNIST.resources, tv.FashionMNIST.resources). Their SHA-256s (not kept here) equal
# those published for the unzipped official files by other projects (e.g. Fashion-MNIST's "raw hashes derived
# from archives matching the publisher's gzip MD5 checksums"), checked on 2026-11-26 against the shared copy.
_UNZIPPED_MD5 = {
    'MNIST': {'train-images-idx3-ubyte': '6bbc9ace898e44ae57da46a324031adb',
              'train-labels-idx1-ubyte': 'a25bea736e30d166cdddb491f175f624',
              't10k-images-idx3-ubyte': '2646ac647ad5339dbf082846283269ea',
              't10k-labels-idx1-ubyte': '27ae3e4e09519cfbb04c329615203637'},
    'FashionMNIST': {'train-images-idx3-ubyte': 'f4a8712d7a061bf5bd6d2ca38dc4d50a',
                     'train-labels-idx1-ubyte': '9018921c3c673c538a1fc5bad174d6f9',
                     't10k-images-idx3-ubyte': '8181f5470baa50b63fa0f6fddb340f0a',
                     't10k-labels-idx1-ubyte': '15d484375f8d13e6eb1aabb0c3f46965'},
}


# Each data set's files as torchvision's class reads them: their folder under the root and each file's official
# MD5, in the class's order. (Fashion-)MNIST: its raw folder and _UNZIPPED_MD5; CIFAR-10/100: `base_folder`,
# `train_list + test_list + [meta]`; SVHN: `split_list`'s train and test. Written out, not read from torchvision's
# classes, so that a plan checks them without importing torchvision (which brings torch); tests/test_datasets.py
# keeps them equal to the classes' lists.
_FILES: dict[str, tuple[str, dict[str, str]]] = {
    'mnist': ('MNIST/raw', _UNZIPPED_MD5['MNIST']),
    'fashion_mnist': ('FashionMNIST/raw', _UNZIPPED_MD5['FashionMNIST']),
    'cifar10': ('cifar-10-batches-py', {'data_batch_1': 'c99cafc152244af753f735de768cd75f',
                                        'data_batch_2': 'd4bba439e000b95fd0a9bffe97cbabec',
                                        'data_batch_3': '54ebc095f3ab1f0389bbae665268c751',
                                        'data_batch_4': '634d18415352ddfa80567beed471001a',
                                        'data_batch_5': '482c414d41f54cd18b22e5b47cb7c3cb',
                                        'test_batch': '40351d587109b95175f43aff81a1287e',
                                        'batches.meta': '5ff9c542aee3614f3951f8cda6e48888'}),
    'cifar100': ('cifar-100-python', {'train': '16019d7e3df5f24257cddd939b257f8d',
                                      'test': 'f0ef6b0ae62326f3e7ffdfab6717acfc',
                                      'meta': '7973b15100ade9c7d40fb424638fde48'}),
    'svhn': ('', {'train_32x32.mat': 'e26dedcc434d2e4c54c9b2d4a06d8373',
                  'test_32x32.mat': 'eb5a983be6a315427106f1b164d9cef3'}),
}


def known_files(name: str, root: Path) -> dict[Path, str]:
    """Every file torchvision reads for data set `name` under `root`, with its official MD5."""
    folder, files = _FILES[name]
    return {root / folder / file: md5 for file, md5 in files.items()}
