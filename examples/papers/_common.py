"""Shared helpers of the paper commands: arguments, tables and figures (no puffer logic).

Every table a paper command prints keeps three kinds of value apart:

* **paper** -- only what the paper states, in the table, figure or section the row's first column
  names (``where``): a printed number, or the formula, bound or pattern the text gives where it
  prints no number (:class:`Stated`);
* **puffer** -- what puffer computes;
* **derived** -- reference values that are *not* in the paper: its formulas evaluated at
  parameters the command chose, closed forms, exact enumerations or high-precision
  reconstructions.

The ``agreement`` column compares puffer with the paper where the paper states something
checkable, and with the derived value otherwise.
"""
from __future__ import annotations

import argparse
import math
import os
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LEGEND = ("paper: only what the paper states, where the first column says; puffer: computed by puffer; "
          "derived: not in the paper (its formulas at parameters chosen here, closed forms, exact "
          "or high-precision reconstructions)")


@dataclass(frozen=True)
class Stated:
    """What the paper states where it prints no number: a formula, a bound or a pattern.
    ``holds(puffer)`` says whether puffer's value is consistent with it (None: not checkable)."""

    text: str
    holds: Callable[[Any], bool] | None = None
    #: a pattern read off a figure, rerun on other data: a failure is "not reproduced", not an error
    pattern: bool = False

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Misprint:
    """A value the paper prints wrongly: shown as printed, puffer compared with the corrected value."""

    printed: object
    corrected: float
    why: str

    def __str__(self) -> str:
        return f"{fmt(self.printed)} (misprint: {self.why})"


def parse(doc: str, argv: Sequence[str] | None = None, *, figures: str | None = None) -> argparse.Namespace:
    """``--quick`` always; ``--plot [DIR]`` when the paper has figures to draw (``figures`` names the
    default folder)."""
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a reduced run (seconds): what the test suite runs")
    if figures is not None:
        p.add_argument("--plot", nargs="?", const=figures, default=None, metavar="DIR",
                       help=f"also draw the figures into DIR (default ./{figures}) and print their paths "
                            "(needs matplotlib: pip install 'puffer-privacy[plot]')")
    return p.parse_args(argv)


def _num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)


def agreement(paper: object, puffer: object, derived: object = None, *, rtol: float = 1e-6, atol: float = 0.0,
              bound: str = "=") -> str:
    """How puffer's value compares: ``= paper`` / ``as stated`` where the paper states something
    checkable, ``= derived`` (or ``<= derived`` for an upper bound, ``bound="<="``) otherwise;
    ``DIFFERENT`` when a check fails, ``-`` when there is nothing to compare; a :class:`Misprint`
    is compared through its corrected value."""
    out = []
    if isinstance(paper, Misprint):
        ok = _num(puffer) and _close(float(puffer), paper.corrected, rtol, atol)   # type: ignore[arg-type]
        out.append(f"= corrected {fmt(paper.corrected)}" if ok else "DIFFERENT")
    elif isinstance(paper, Stated):
        if paper.holds is not None:
            out.append("as stated" if paper.holds(puffer) else "not reproduced" if paper.pattern else "DIFFERENT")
    elif _num(paper) and _num(puffer):
        out.append("= paper" if _close(float(puffer), float(paper), rtol, atol) else "DIFFERENT")
    elif paper is not None and str(paper) == str(puffer):
        out.append("= paper")
    if _num(derived) and _num(puffer):
        d, v = float(derived), float(puffer)
        if bound == "<=":
            out.append("<= derived" if v <= d * (1 + rtol) + atol else "ABOVE derived")
        else:
            out.append("= derived" if _close(v, d, rtol, atol) else "DIFFERENT")
    elif derived is not None and str(derived) == str(puffer):
        out.append("= derived")
    return "; ".join(out) or "-"


def fmt(v: object) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return "-" if v is None else str(v)


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]], *, width: int = 36) -> None:
    """Print a plain-text table; the first column says where in the paper the row is from. Cells
    longer than ``width`` wrap onto continuation lines (whose first column is empty)."""
    cells = [[textwrap.wrap(fmt(c), width) or [""] for c in r] for r in rows]
    w = [max([len(h)] + [len(line) for r in cells for line in r[i]]) for i, h in enumerate(header)]
    print()
    print(textwrap.fill(title, 100, break_on_hyphens=False))
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(header)).rstrip())
    print("  ".join("-" * x for x in w))
    for r in cells:
        for k in range(max(len(c) for c in r)):
            print("  ".join((c[k] if k < len(c) else "").ljust(w[i]) for i, c in enumerate(r)).rstrip())


COLUMNS = ("where", "what", "paper", "puffer", "derived", "agreement")


def compared(title: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """A table of (where, what, paper, puffer, derived[, options]) rows with the agreement column;
    options (a dict) go to :func:`agreement` (``rtol``, ``atol``, ``bound``)."""
    out = []
    for r in rows:
        where, what, paper, ours, derived, *opt = r
        out.append((where, what, paper, ours, derived, agreement(paper, ours, derived, **(opt[0] if opt else {}))))
    table(title, COLUMNS, out)


def note(*paragraphs: str) -> None:
    """Print explanations as paragraphs wrapped at 100 characters."""
    for text in paragraphs:
        print()
        print(textwrap.fill(text, 100, break_on_hyphens=False))


def figure_dir(path: str) -> Path:
    """The folder the figures go to (created); matplotlib draws off-screen."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def wrote(paths: Sequence[os.PathLike[str] | str]) -> None:
    """Say where the figures are."""
    paths = [Path(p) for p in paths]
    print(f"\nwrote {len(paths)} figure(s) to {paths[0].parent.resolve() if paths else '-'}:")
    for p in paths:
        print(f"  {p}")
