"""The ``puffer account FILE`` command: compose the releases a file lists and explain the total.

``puffer account FILE``: compose a list of releases described in a TOML or JSON file and print
the total guarantee and its explanation.

File format (unknown keys are errors)::

    name = "ambulance counts"          # optional
    granularity = "Bounded"            # Unbounded | Bounded | FreeLunch
    notion = "approx"                  # pure | approx | zcdp | gdp
    [domain]                           # optional; default: the granularity's class
    kind = "FixedSize"                 # AllMultisets | FixedSize
    X = ["a1", "a2", "a3"]             # optional universe
    [[release]]
    label = "count@h1"                 # optional
    guarantee = { type = "ApproxDP", eps = 1.0, delta = 1e-5 }   # a guarantee's to_dict()
    select = ["a1", "a3"]              # records the release reads (RecordFilter); omit: all
    scope = "common"                   # common | local (default common)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any, cast

from ..errors import ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from .accountant import Accountant

__all__ = ["add_parser", "run", "load_releases", "accountant_from_config"]

_TOP = {"name", "granularity", "notion", "domain", "release"}
_REL = {"label", "guarantee", "select", "scope"}


def add_parser(subparsers: Any) -> None:
    """Register the ``puffer account`` subcommand and its options."""
    p = subparsers.add_parser("account", help="compose the releases listed in a TOML/JSON file "
                              "(Guerra-Balboa et al. 2024) and explain the total")
    p.add_argument("file", help="a TOML/JSON list of releases, or a release ledger (JSON lines written by "
                                "`puffer noise`: then the per-unit totals of `puffer ledger show`)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def load_releases(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the file (TOML if it ends in .toml, else JSON)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ParameterError("file", str(path), f"a readable file ({exc.strerror})") from None
    if str(path).endswith(".toml"):
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # Python 3.10
            import tomli as tomllib
        try:
            return cast("dict[str, Any]", tomllib.loads(data.decode("utf-8")))  # Any when type-checked for 3.10 (tomli branch)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ParameterError("file", str(path), f"valid TOML ({exc})") from None
    try:
        cfg = json.loads(data)
    except ValueError as exc:
        raise ParameterError("file", str(path), f"valid JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise ParameterTypeError("file", str(path), "a JSON object at the top level")
    return cfg


def accountant_from_config(cfg: dict[str, Any]) -> Accountant:
    """An :class:`~puffer.accounting.Accountant` holding the releases of a validated ``puffer account`` description."""
    from .. import guarantees
    from . import Accountant
    from .databases import domain_from_dict
    from .granularity import granularity_from_dict
    from .selectors import Identity, RecordFilter

    extra = set(cfg) - _TOP
    if extra:
        k = sorted(extra)[0]
        raise ParameterError(k, cfg[k], f"a top-level key among {sorted(_TOP)}")
    if "granularity" not in cfg:
        raise ParameterError("granularity", "<missing>", "Unbounded, Bounded or FreeLunch")
    G = granularity_from_dict(cfg["granularity"])
    dom = None if "domain" not in cfg else domain_from_dict(cfg["domain"])
    acc = Accountant(G, domain=dom, notion=cfg.get("notion", "pure"))
    rels = cfg.get("release")
    if not isinstance(rels, list) or not rels:
        raise ParameterError("release", rels, "a non-empty list of [[release]] tables")
    for i, r in enumerate(rels):
        if not isinstance(r, dict):
            raise ParameterTypeError(f"release[{i}]", r, "a table")
        extra = set(r) - _REL
        if extra:
            k = sorted(extra)[0]
            raise ParameterError(f"release[{i}].{k}", r[k], f"a key among {sorted(_REL)}")
        if "guarantee" not in r:
            raise ParameterError(f"release[{i}].guarantee", "<missing>", "a guarantee dict with a 'type' key")
        g = guarantees.guarantee_from_dict(r["guarantee"])
        sel = Identity() if "select" not in r else RecordFilter(r["select"])
        acc.add(g, selector=sel, scope=r.get("scope", "common"), label=r.get("label"))
    return acc


def _is_ledger(path: str) -> bool:
    """A release ledger: JSON lines whose first line is an entry with ``puffer_ledger``."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
        e = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(e, dict) and "puffer_ledger" in e and "prev" in e


def run(args: argparse.Namespace, out: Any = None) -> int:
    """Run ``puffer account`` (a release list or a ledger); returns the exit code."""
    out = out or sys.stdout
    if _is_ledger(args.file):
        from ..publish.report import ledger_report, print_report

        rep = ledger_report(args.file)
        if args.json:
            json.dump(rep, out, indent=1, sort_keys=True, default=str)
            out.write("\n")
        else:
            print_report(rep, out)
        return 0
    cfg = load_releases(args.file)
    acc = accountant_from_config(cfg)
    res = acc.result()
    if args.json:
        doc = {"name": cfg.get("name"), "total": res.guarantee.to_dict(), "strategy": res.strategy,
               "theorem": res.theorem, "worst_edge": res.edge, "touched": list(res.touched),
               "reason": res.reason, "sequential": res.sequential}
        json.dump(doc, out, indent=1, default=str)
        out.write("\n")
        return 0
    if cfg.get("name"):
        print(f"puffer account: {cfg['name']}", file=out)
    print(f"total: {res.guarantee!r}", file=out)
    print(acc.explain(), file=out)
    return 0
