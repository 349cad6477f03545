"""Totals per privacy unit over a ledger (``puffer ledger show``), and the rule that refuses a
release which would leave a unit without one.

A unit is named by the release's privacy-unit column (``unit=``); a release without a unit
counts each row as its own unit, and since nothing says which individuals rows of different
files belong to, all row-level releases are taken to touch the same units (the safe side).
Within one release every unit's answer gets its own independent noise, so the per-unit
guarantee holds for all units together by parallel composition over disjoint independent
units (Pierquin et al. 2024, Prop E.1; the units' independence under every prior is the
framework's premise, recorded in the entry). Across releases on the same unit:

* DP-type guarantees (PureDP, ApproxDP, ZCDP, GDP, RDP) compose sequentially through
  :class:`puffer.accounting.Accountant` (Guerra-Balboa et al. 2024);
* a Pufferfish guarantee (PP, RPP, approximate RPP, RPP curve) holds for one release only: no
  sequential composition theorem is known (Pierquin et al. 2024, App. E.1). Two such releases
  on one unit, or a multi-column release of a scalar mechanism (one release per column), leave
  the unit with **no total guarantee**; such a release is refused unless ``allow_uncomposed``
  (recorded in its entry);
* uncalibrated noise has no guarantee, so neither has any total that includes it.

Re-runs (same bytes as the release they reproduce) add nothing; releases their own run
recorded as ``aborted`` (never renamed into place) count for nothing; pending and ``unknown``
ones (a killed run) count: they may have been published, the safe side.
"""
from __future__ import annotations

import math
from typing import Any

from ..errors import ParameterError

__all__ = ["unit_totals", "check_new_release", "unit_label"]

_DP = ("PureDP", "ApproxDP", "ZCDP", "GDP", "RDP")
_E1 = "parallel composition over disjoint independent units (Pierquin et al. 2024, Prop E.1)"


def unit_label(e: dict[str, Any]) -> str:
    u = e.get("unit")
    if isinstance(u, dict) and u.get("column"):
        return str(u["column"])
    return "(row)"


def _per_unit(e: dict[str, Any]) -> int:
    """Releases per unit in one entry: one per column for a scalar mechanism, one for a vector."""
    dim = int(e.get("dim") or 1)
    return 1 if dim > 1 else len(e.get("columns") or [1])


def _counted(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from .ledger import release_states

    out = []
    for st in release_states(entries).values():
        if st["status"] == "aborted" or st["entry"].get("rerun_of"):
            continue
        out.append(st["entry"])
    return out


def _total(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The total over a unit's releases: {"guarantee": dict or None, "theorem"/"reason", "releases"}."""
    from ..guarantees import guarantee_from_dict

    n = sum(_per_unit(e) for e in items)
    ids = [e.get("release_id") for e in items]
    gs = [e.get("guarantee") for e in items]
    if any(g is None for g in gs):
        return {"releases": n, "release_ids": ids, "guarantee": None,
                "reason": "no total guarantee: a release with uncalibrated noise (no guarantee) touches this unit"}
    gd: list[dict[str, Any]] = [g for g in gs if isinstance(g, dict)]
    types = {g.get("type") for g in gd}
    if types <= set(_DP):
        from ..accounting import Accountant, NotComposableError, Unbounded

        notion = {"PureDP": "pure", "ApproxDP": "approx", "ZCDP": "zcdp", "GDP": "gdp", "RDP": "rdp"}
        try:
            acc = Accountant(Unbounded(), notion=notion[gd[0]["type"]] if len(types) == 1 else "approx")
            for e in items:
                g = guarantee_from_dict(e["guarantee"])
                for _ in range(_per_unit(e)):
                    acc.add(g)
            tot = acc.total()
        except (NotComposableError, ParameterError) as exc:
            return {"releases": n, "release_ids": ids, "guarantee": None,
                    "reason": f"no total guarantee: {n} releases on the same unit and the accountant cannot "
                              f"compose them ({exc})"}
        return {"releases": n, "release_ids": ids, "guarantee": tot.to_dict(),
                "theorem": "sequential composition (puffer.accounting, Guerra-Balboa et al. 2024); " + _E1}
    if n == 1:
        return {"releases": 1, "release_ids": ids, "guarantee": gs[0],
                "theorem": "one release per unit; " + _E1}
    return {"releases": n, "release_ids": ids, "guarantee": None,
            "reason": f"no total guarantee: {n} releases on the same unit; Pufferfish guarantees "
                      f"({', '.join(sorted(t for t in types if t))}) have no known sequential composition "
                      "(Pierquin et al. 2024, App. E.1)"}


def unit_totals(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """unit label -> its total (see the module docstring)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for e in _counted(entries):
        by.setdefault(unit_label(e), []).append(e)
    return {u: _total(items) for u, items in sorted(by.items())}


def _eps(g: dict[str, Any] | None) -> float | None:
    if not isinstance(g, dict):
        return None
    v = g.get("eps")
    if isinstance(v, (int, float)):
        return float(v)
    if v == "inf":
        return math.inf
    return None


def check_new_release(entries: list[dict[str, Any]], new: dict[str, Any], *, allow_uncomposed: bool = False,
                      budget: Any = None) -> dict[str, Any]:
    """Refuse ``new`` if it would leave its unit without a total guarantee (unless
    ``allow_uncomposed``) or push the total's eps over ``budget``; returns the total after it."""
    label = unit_label(new)
    before = [e for e in _counted(entries) if unit_label(e) == label]
    tot = _total(before + [new])
    had = _total(before) if before else None
    if tot["guarantee"] is None and not allow_uncomposed:
        if (had is None and new.get("guarantee") is not None) or (had is not None and had["guarantee"] is not None):
            raise ParameterError("allow_uncomposed", False,
                                 f"a release that keeps a total guarantee for unit {label!r}: after it, "
                                 f"{tot['reason']}. Pass allow_uncomposed=True (--allow-uncomposed) to release "
                                 "anyway; the allowance is recorded in the ledger")
    if budget is not None:
        b = float(budget)
        if not math.isfinite(b) or b <= 0:
            raise ParameterError("budget", budget, "a finite eps budget > 0")
        eps = _eps(tot["guarantee"])
        if eps is None:
            raise ParameterError("budget", budget, f"a unit whose total has an eps (unit {label!r}: "
                                 f"{tot.get('reason') or tot['guarantee']})")
        if eps > b:
            raise ParameterError("budget", budget, f"a total eps within the budget for unit {label!r} (the "
                                 f"release would make it {eps:g})")
    return {"unit": label, "releases": tot["releases"], "total": tot["guarantee"],
            **({"theorem": tot["theorem"]} if "theorem" in tot else {"reason": tot["reason"]})}


# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "unit_totals": (Ref("pierquin2024", "Prop E.1"),),
}
