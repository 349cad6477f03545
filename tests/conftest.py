"""Shared test set-up: tests/ is on sys.path so modules import the shared oracles (tests/oracles.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_collection_modifyitems(config, items):
    """Tests about threads (name or parameters mention them) are also `threaded`: the TSan stage
    of scripts/cpp_checks.sh runs that marker."""
    import pytest

    for item in items:
        if "thread" in item.nodeid.lower() or "parallel" in item.nodeid.lower():
            item.add_marker(pytest.mark.threaded)
