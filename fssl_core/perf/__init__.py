"""Speed and device checks: the benchmarks, the GPU check, the fingerprint of a machine's numbers."""
