"""Shared by the kill tests: a forked ``puffer`` command line, and the staging-file names."""
from __future__ import annotations

import os
import signal

from puffer import cli

STAGING_MARKERS = (".puffer-incomplete-", ".puffer-tmp-")  # now, and the earlier name


def fork_cli(args):
    """Fork a `puffer` run (no interpreter start-up: the kill lands inside the release)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 99
        try:
            # SIGTERM caught again means `puffer noise` has started (tests/timing.py: catches)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            code = cli.main(args)
        finally:
            os._exit(code)
    return pid


def staging_files(folder, output_name=None):
    """Staging files in ``folder`` (of one output, if named)."""
    return [n for n in os.listdir(folder) if any(m in n for m in STAGING_MARKERS)
            and (output_name is None or n.startswith(f".{output_name}."))]
