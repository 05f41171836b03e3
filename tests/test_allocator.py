"""A training process keeps the memory it frees (engine/allocator.py): a step's tensors reuse the pages of the
step before instead of faulting fresh ones in from the kernel."""
import subprocess
import sys
import textwrap

import pytest

FAULTS = textwrap.dedent("""
    import resource, sys, torch
    from fssl_core.engine.allocator import keep_freed_memory
    if sys.argv[1] == "keep":
        assert keep_freed_memory()
    torch.set_num_threads(1)                 # as a run trains (engine/trainer.py)
    for _ in range(10):                      # the first steps: the heap grows to what a step needs
        torch.empty(16 << 20).fill_(1.0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):                      # the steps after: 64 MiB of activations made and freed each
        torch.empty(16 << 20).fill_(1.0)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_freed_tensors_are_reused_instead_of_faulted_in_again():
    def faults(mode):
        return int(subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True,
                                  check=True).stdout)
    default, kept = faults("default"), faults("keep")
    # by default each 64 MiB block is mapped afresh (16,384 pages a step); kept, the grown heap's pages serve them
    assert default >= 9 * 16384 and kept < 16384, (default, kept)
