"""The ``puffer capacity-table`` command: Table 1 of capacity bounded DP, exact and sound values.

``puffer capacity-table``: print Table 1 of Chaudhuri, Imola, Machanavajjhala 2019 with the
exact and sound (lin, Rényi) values next to the printed bounds."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_parser", "run"]

NAME = "capacity-table"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register the ``puffer capacity-table`` subcommand and its options."""
    p = subparsers.add_parser(NAME, help="print Table 1 of capacity bounded DP (exact, sound and printed values)",
                              description=__doc__)
    p.add_argument("--eps-noise", type=float, default=1.0, help="Laplace noise parameter (scale 1/eps_noise)")
    p.add_argument("--sigma", type=float, default=1.0, help="Gaussian noise standard deviation")
    p.add_argument("--alpha", type=float, default=2.0, help="Rényi order (> 1)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def run(args: argparse.Namespace, out: Any = None) -> int:
    """Run ``puffer capacity-table``; returns the exit code."""
    from .figures import format_table1, table1
    out = sys.stdout if out is None else out
    rows = table1(args.eps_noise, args.sigma, args.alpha)
    if args.json:
        print(json.dumps(rows, indent=1), file=out)
    else:
        print(format_table1(rows), file=out)
    return 0
