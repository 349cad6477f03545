"""Shared helpers of the paper commands: argument parsing and table printing (no puffer logic)."""
from __future__ import annotations

import argparse
from collections.abc import Sequence


def parse(doc: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a reduced run (seconds): what the test suite runs")
    return p.parse_args(argv)


def fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "-" if v is None else str(v)


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a plain-text table (paper value next to puffer's)."""
    cells = [[fmt(c) for c in r] for r in rows]
    w = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(header)))
    print("  ".join("-" * x for x in w))
    for r in cells:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)))
