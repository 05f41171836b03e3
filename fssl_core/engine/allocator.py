"""Keep freed memory in the process: glibc's allocator serves a large tensor from mmap and hands it back to the
kernel when freed (its dynamic mmap threshold, and the heap's trim above 128 KiB), so each training step faults
the same pages in again. A 10-round FedAvg MNIST run took 0.5-2.6 million minor page faults and 1.3-2.7 s of
system time that way, 0.19 million and 0.6-0.8 s with the thresholds below (measurements/2026-11-29-page-faults),
for about 50 MB more peak memory. Floats are untouched: only where memory comes from changes."""
from __future__ import annotations

import ctypes
import functools
import sys

# mallopt's parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
HELD_BYTES = 1 << 30        # blocks below 1 GiB come from the heap, and up to 1 GiB of free heap is kept
TOP_PAD_BYTES = 256 << 20   # the heap grows in steps of 256 MiB: fewer brk calls while a round's tensors grow


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's thresholds once for this process; False where the C library is not glibc (macOS, musl): the
    allocator there is left as it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    settings = ((M_MMAP_THRESHOLD, HELD_BYTES), (M_TRIM_THRESHOLD, HELD_BYTES), (M_TOP_PAD, TOP_PAD_BYTES))
    return all(mallopt(parameter, value) == 1 for parameter, value in settings)
