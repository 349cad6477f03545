"""Ctrl-C while the ``puffer`` command starts: one line and exit 130, never a traceback.

The command (``puffer`` from ``[project.scripts]`` = ``puffer.cli:main``, or ``python -m
puffer``) imports this package, then :mod:`puffer.cli`, before :func:`puffer.cli.main` installs
its signal handling; a SIGINT in those first tens of milliseconds raised ``KeyboardInterrupt``
inside an import and printed its traceback. :func:`guard` runs when ``puffer/__init__`` imports
this module, before any other import (``typing`` alone takes tens of milliseconds): when (and only when) this process is the command, it points SIGINT at a handler that writes
``puffer: interrupted`` to stderr and ends the process with 130 at once (nothing has been read or
written yet, so there is nothing to clean up, and an exception raised inside an import could be
garbled by the library being imported, as :class:`puffer.cli._Signals` explains). ``main``
replaces the handler as soon as it runs. ``import puffer`` in any other program changes nothing.

A SIGINT ignored when the process started stays ignored (``puffer ... &`` in a shell without job
control), as ``main`` keeps it. A SIGINT that lands before the interpreter has reached this
package (its own start-up and ``site``) is the interpreter's to handle.
"""
from __future__ import annotations

import os
import signal
import sys

#: what the command writes on Ctrl-C, as :func:`puffer.cli.main` does
MESSAGE = b"puffer: interrupted\n"
EXIT_INTERRUPT = 130


def is_the_command() -> bool:
    """True when this process runs the ``puffer`` command: the console script (``argv[0]`` named
    ``puffer``) or ``python -m puffer`` (the interpreter's own ``-m puffer`` arguments); never in
    a worker process multiprocessing started (a spawned child gets its parent's ``argv``)."""
    mp = sys.modules.get("multiprocessing.process")
    if mp is not None and mp.parent_process() is not None:
        return False
    argv = getattr(sys, "argv", None) or [""]
    if os.path.basename(str(argv[0])) in ("puffer", "puffer.exe", "puffer-script.py"):
        return True
    orig = [str(a) for a in getattr(sys, "orig_argv", ())]
    for i, a in enumerate(orig[1:], 1):
        if a == "-m" and i + 1 < len(orig):
            return orig[i + 1] == "puffer"
        if a.startswith("-m"):
            return a[2:] == "puffer"
        if not a.startswith("-"):   # the script or command: options of the interpreter end here
            return False
    return False


def _interrupted(signum: int, frame: object) -> None:
    try:
        os.write(2, MESSAGE)
    finally:
        os._exit(EXIT_INTERRUPT)


def guard() -> bool:
    """Install the start-up SIGINT handler if this process is the command (see the module doc);
    True when it was installed."""
    if not is_the_command():
        return False
    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:  # ignored, or someone's own
            return False
        signal.signal(signal.SIGINT, _interrupted)
    except ValueError:  # not the main thread: signals are not ours to set
        return False
    return True


guard()
