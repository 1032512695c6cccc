"""What several benchmarks share; not itself a benchmark (make bench runs bench/*.py only)."""
