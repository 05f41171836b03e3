"""2×2 max-pooling of the MNIST CNN's maps with no gradient, one thread, with a run's allocator settings
(engine/allocator.py): the channels_last pool with indices that models/pooling.py used before, PyTorch's NCHW
kernel, and the maximum of strided views it uses now. Least of 20 calls after 3 warm-ups; the values compared.

    python measurements/2026-11-29-eval-share/pooling.py
"""
import time

import torch
import torch.nn.functional as F

from fssl_core.engine.allocator import keep_freed_memory
from fssl_core.models.pooling import _max_of_windows, _MaxPool2x2ChannelsLast

torch.set_num_threads(1)
keep_freed_memory()
kinds = {"channels_last with indices (before)": lambda x: _MaxPool2x2ChannelsLast.apply(x)[0],
         "F.max_pool2d, NCHW": lambda x: F.max_pool2d(x, 2), "strided maximum (now)": _max_of_windows}
for shape in [(1024, 10, 24, 24), (1024, 20, 8, 8)]:
    x = torch.randn(shape)
    least = {}
    with torch.no_grad():
        reference = F.max_pool2d(x, 2)
        for name, pool in kinds.items():
            assert torch.equal(pool(x), reference), name
            for _ in range(3):
                pool(x)
            times = []
            for _ in range(20):
                began = time.perf_counter()
                pool(x)
                times.append(time.perf_counter() - began)
            least[name] = min(times)
            print(f"{list(shape)}  {name:36s} {1e3 * least[name]:6.2f} ms")
    before, now = least["channels_last with indices (before)"], least["strided maximum (now)"]
    print(f"{list(shape)}  before / now: {before / now:.1f}×")
