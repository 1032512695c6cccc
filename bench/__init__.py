"""make bench: each script measures svc against a peer in the same run (docs/performance.md)."""
