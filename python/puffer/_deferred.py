"""A signal that arrived inside an import and was deferred, acted on before a release publishes.

``puffer.cli`` defers SIGTERM / SIGINT that land inside an import (a library garbles an exception
raised there) and raises them from a 10 ms timer once the import is over. If every tick of the
timer lands in another import, the signal could still be pending when the release reaches its
commit point, and the release was published with exit 0 after the SIGTERM. The file engine calls
:func:`raise_deferred` just before it records and publishes, so a pending signal stops it there.

It is a top-level module, not part of :mod:`puffer.publish`: the command line installs the hook on
every command, and ``puffer --version`` must not import numpy (``puffer.publish`` does).
"""
from __future__ import annotations

from collections.abc import Callable

_hook: Callable[[], None] | None = None


def set_hook(fn: Callable[[], None] | None) -> None:
    """Install (or remove, with None) the function that raises a pending deferred signal."""
    global _hook
    _hook = fn


def raise_deferred() -> None:
    """Raise a signal the command line deferred, if one is pending (no-op otherwise)."""
    if _hook is not None:
        _hook()
