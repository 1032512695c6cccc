"""Tests of the fleet app (contract §18)."""
