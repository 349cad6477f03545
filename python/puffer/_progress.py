"""Progress reporting for long core computations (the kernels count units of work; the binding
calls ``callback(done, total)`` about every 100 ms from the calling thread, see
cpp/bindings/job.hpp).

``progress=`` arguments accept None (a bar on stderr only when stderr is a terminal and the job
is estimated to take more than a second), True (always a bar on stderr), False (nothing) or a
callable ``f(done, total)``. Inside ``progress_default(True)`` None means a bar on stderr for
every job estimated to take more than a second, terminal or not (the CLI runs in one);
``progress_default(False)`` turns the automatic bar off.

>>> seen = []
>>> cb = resolve(lambda d, t: seen.append((d, t)), seconds=0.0)
>>> cb(5, 10); seen
[(5, 10)]
>>> resolve(False, seconds=100.0) is None
True
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["resolve", "progress_default", "StderrBar"]

Callback = Callable[[int, int], Any]

_DEFAULT: contextvars.ContextVar[bool | None] = contextvars.ContextVar("puffer_progress_default", default=None)


@contextlib.contextmanager
def progress_default(value: bool | None) -> Iterator[None]:
    """Within the block, ``progress=None`` shows a bar for jobs estimated > 1 s iff ``value``
    (None restores the default: only when stderr is a terminal)."""
    tok = _DEFAULT.set(value)
    try:
        yield
    finally:
        _DEFAULT.reset(tok)


class StderrBar:
    """A one-line progress bar on stderr (tqdm when installed, else a small built-in bar)."""

    def __init__(self, label: str = "puffer"):
        self._label = label
        self._tqdm: Any = None
        self._last = 0.0
        self._t0 = time.monotonic()
        self._tty = sys.stderr.isatty()
        try:
            import tqdm  # type: ignore[import-untyped]

            self._tqdm_mod = tqdm
        except ImportError:
            self._tqdm_mod = None

    def __call__(self, done: int, total: int) -> None:
        if self._tqdm_mod is not None:
            if self._tqdm is None:
                self._tqdm = self._tqdm_mod.tqdm(total=total, desc=self._label, file=sys.stderr, leave=False)
            self._tqdm.n = done
            self._tqdm.refresh()
            if done >= total:
                self._tqdm.close()
            return
        now = time.monotonic()
        if done < total and now - self._last < (0.2 if self._tty else 5.0):
            return
        self._last = now
        frac = done / total if total else 1.0
        bar = "#" * int(30 * frac)
        end = "\n" if done >= total or not self._tty else ""
        sys.stderr.write(f"\r{self._label} [{bar:<30}] {100 * frac:5.1f}% {now - self._t0:6.1f} s{end}")
        sys.stderr.flush()


def resolve(progress: bool | Callback | None, *, seconds: float, label: str = "puffer") -> Callback | None:
    """The callback for a ``progress=`` argument, given the job's estimated seconds."""
    if progress is None:
        default = _DEFAULT.get()
        # None: a terminal and a long job; inside progress_default(True): any long job
        progress = seconds > 1.0 and (sys.stderr.isatty() if default is None else default)
    if progress is False:
        return None
    if progress is True:
        return StderrBar(label)
    if callable(progress):
        return progress
    from .errors import ParameterError

    raise ParameterError("progress", progress, "None, True, False or a callable f(done, total)")
