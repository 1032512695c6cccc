"""The in-process bridge harness's fixtures, for test_sdk_matrix.py (a test file's own fixture of
the same name wins over these)."""

from harness.fakes.bridge_inprocess import bridge, fake, profiles  # noqa: F401
