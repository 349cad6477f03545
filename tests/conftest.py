"""Shared test set-up: tests/ is on sys.path so modules import the shared oracles (tests/oracles.py)."""
import os
import signal
import sys

import mpmath
import pytest

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


# The tests of Ctrl-C (KeyboardInterrupt from `_thread.interrupt_main`, SIGINT sent to forked
# children) need Python's SIGINT handler. A shell without job control starts background commands
# (`bash .ci/run &`) with SIGINT ignored, and Python then keeps it ignored: interrupt_main did
# nothing and three interrupt tests failed ("DID NOT RAISE"). Test as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _mpmath_precision(request):
    """Every test starts at a known mpmath precision and leaves none behind: the module's
    ``MPMATH_DPS`` (15 digits, mpmath's default, where a module names none), restored afterwards.
    mpmath's precision is process-global: a module-level ``mp.dps = 40`` lasted only until another
    module set its own, and a test that set ``mp.dps = 30`` changed it for whichever test ran next
    in the same xdist worker (an oracle asserting 1e-35 failed in CI at 30 digits)."""
    with mpmath.workdps(getattr(request.module, "MPMATH_DPS", 15)):
        yield


def pytest_collection_modifyitems(config, items):
    """Tests about threads (name or parameters mention them) are also `threaded`: the TSan stage
    of scripts/cpp_checks.sh runs that marker."""
    for item in items:
        if "thread" in item.nodeid.lower() or "parallel" in item.nodeid.lower():
            item.add_marker(pytest.mark.threaded)
