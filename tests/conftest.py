"""Shared test set-up: tests/ is on sys.path so modules import the shared oracles (tests/oracles.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

try:
    # No test may fail because the machine is slow: hypothesis's per-example deadline (200 ms) and
    # its "too slow" health check measure wall time: a loaded CI machine could fail them. Every
    # settings() in the suite inherits this profile.
    from hypothesis import HealthCheck, settings

    settings.register_profile("puffer", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("puffer")
except ImportError:  # pragma: no cover - hypothesis is a test extra
    pass


def pytest_collection_modifyitems(config, items):
    """Tests about threads (name or parameters mention them) are also `threaded`: the TSan stage
    of scripts/cpp_checks.sh runs that marker."""
    import pytest

    for item in items:
        if "thread" in item.nodeid.lower() or "parallel" in item.nodeid.lower():
            item.add_marker(pytest.mark.threaded)
