"""Progress reporting for long core computations (the kernels count units of work; the binding
calls ``callback(done, total)`` about every 100 ms from the calling thread, see
cpp/bindings/job.hpp).

``progress=`` arguments accept None (automatic), True (always a bar on stderr), False (nothing)
or a callable ``f(done, total)``. Automatic means: a bar on stderr once the job has *run* for more
than a second when stderr is a terminal, and a plain heartbeat line every 5 seconds (the first
after 5 s) when it is not: a pipe, a log file, a notebook (decided by elapsed time, not by an
estimate, so a long job always reports and a short one stays quiet). Inside
``progress_default(True)`` (the CLI) a stderr that is not a terminal also gets its first line
after a second; ``progress_default(False)`` turns automatic progress off.

A terminal gets a redrawn bar (tqdm when installed); a pipe or a log file never gets tqdm's
carriage-return redraws: it gets one plain line every 5 seconds and one at the end. A stderr
that cannot be written to (closed, a broken pipe, None) silences the bar; it never stops the job.

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

__all__ = ["resolve", "progress_default", "StderrBar", "DelayedBar"]

Callback = Callable[[int, int], Any]

# seconds a job runs before the automatic bar appears on a terminal
SHOW_AFTER = 1.0
# seconds between two plain lines into a pipe or a file (also the first line's delay there)
PLAIN_EVERY = 5.0

_DEFAULT: contextvars.ContextVar[bool | None] = contextvars.ContextVar("puffer_progress_default", default=None)


@contextlib.contextmanager
def progress_default(value: bool | None) -> Iterator[None]:
    """Within the block, ``progress=None`` shows a bar for jobs running > 1 s iff ``value``
    (None restores the default: only when stderr is a terminal)."""
    tok = _DEFAULT.set(value)
    try:
        yield
    finally:
        _DEFAULT.reset(tok)


class StderrBar:
    """A one-line progress bar on stderr: tqdm when installed and stderr is a terminal, else a
    small built-in bar (redrawn on a terminal, one line per 5 s into a pipe or a file)."""

    def __init__(self, label: str = "puffer", *, t0: float | None = None):
        self._label = label
        self._tqdm: Any = None
        self._last = 0.0
        self._t0 = time.monotonic() if t0 is None else t0
        self._tty = _isatty(sys.stderr)
        self._broken = False
        self._ended = False
        self._tqdm_mod = None
        if self._tty:
            try:
                import tqdm

                self._tqdm_mod = tqdm
            except ImportError:
                pass

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
        if self._broken or self._ended:
            return
        if done < total and now - self._last < (0.2 if self._tty else PLAIN_EVERY):
            return
        # the end is reported once (a job may report its total again while it finishes up)
        self._last, self._ended = now, done >= total
        frac = done / total if total else 1.0
        bar = "#" * int(30 * frac)
        try:
            if self._tty:
                end = "\n" if done >= total else ""
                sys.stderr.write(f"\r{self._label} [{bar:<30}] {100 * frac:5.1f}% {now - self._t0:6.1f} s{end}")
            else:
                sys.stderr.write(f"{self._label}: {done}/{total} ({100 * frac:.1f}%) after {now - self._t0:.1f} s\n")
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):   # no stderr, a closed file, a broken pipe
            self._broken = True


class DelayedBar:
    """The automatic bar: silent until the job has run ``after`` seconds, then a :class:`StderrBar`
    (elapsed time counted from the bar's creation, i.e. the job's start; ``after`` = 0 shows
    every report, the end included).

    >>> bar = DelayedBar("job", after=3600.0)
    >>> bar(1, 2); bar.shown
    False
    """

    def __init__(self, label: str = "puffer", *, after: float = SHOW_AFTER):
        self._label = label
        self._after = after
        self._t0 = time.monotonic()
        self._bar: StderrBar | None = None

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            # a job that ends before ``after`` stays quiet (after = 0: every report is shown)
            if time.monotonic() - self._t0 < self._after or (done >= total and self._after > 0):
                return
            self._bar = StderrBar(self._label, t0=self._t0)
        self._bar(done, total)


def _isatty(f: Any) -> bool:
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError):
        return False


def resolve(progress: bool | Callback | None, *, seconds: float = 0.0, label: str = "puffer") -> Callback | None:
    """The callback for a ``progress=`` argument. ``seconds`` (an estimate) is accepted for the
    callers' convenience but decides nothing: the automatic bar appears after one second of
    elapsed time on a terminal (or inside ``progress_default(True)``), after ``PLAIN_EVERY``
    seconds into a pipe or a file."""
    del seconds
    if progress is None:
        default = _DEFAULT.get()
        if default is False or sys.stderr is None:
            return None
        return DelayedBar(label, after=SHOW_AFTER if default or _isatty(sys.stderr) else PLAIN_EVERY)
    if progress is False:
        return None
    if progress is True:
        return StderrBar(label)
    if callable(progress):
        return progress
    from .errors import ParameterError

    raise ParameterError("progress", progress, "None, True, False or a callable f(done, total)")
