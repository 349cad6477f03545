"""Totals by the units themselves over a ledger, and the rule that refuses a release without one.

Totals by the units themselves over a ledger (``puffer ledger show``), and the rule that
refuses a release which would leave units without one.

Which units. Every entry records the units its release touched (:mod:`puffer.publish.unitsets`):
keyed hashes of the unit ids, whatever the unit column is called and whichever of ``unit=``,
``per_unit=`` or plain noise was used; a release whose rows name no unit (plain noise on rows,
``per_unit=True`` without ``unit=``) touches every unit. Entries written before unit sets
existed touch every unit too (the safe side).

Which releases. A release and its re-runs publish the same bytes, so they count once, and they
count if any of them may have been published: a release recorded ``aborted`` by its own run
(never renamed into place) counts for nothing, until a re-run publishes it; pending and
``unknown`` ones (a killed run) count.

Populations. The units are split by the set of counted releases that touched them; each
maximal such set is a *population* (units touched by fewer releases are covered by the total
of a population containing theirs: composition only grows with more releases). Within one
release every unit's answer gets its own independent noise, and units touched by disjoint sets
of releases are disjoint, so per-unit guarantees hold for all units together by parallel
composition over disjoint independent units (Pierquin et al. 2024, Prop E.1; the units'
independence under every prior is the framework's premise, recorded in the entry): one ledger
can hold every month or region of a publication. The total of a population composes its
releases (one per column for a scalar mechanism):

* one release: its guarantee;
* DP-type guarantees (PureDP, ApproxDP, ZCDP, GDP, RDP) compose sequentially through
  :class:`puffer.accounting.Accountant` (Guerra-Balboa et al. 2024);
* a Pufferfish guarantee (PP, RPP, approximate RPP, RPP curve) holds for one release only: no
  sequential composition theorem is known (Pierquin et al. 2024, App. E.1), so two such
  releases on one unit leave it with **no total guarantee**;
* uncalibrated noise has no guarantee, so neither has any total that includes it;
* the windows of one planned series (:mod:`puffer.publish.series`) count **once**, with the
  plan's guarantee: the plan certifies all its windows together (:func:`puffer.series.plan`),
  whatever subset of them is published; the series then composes with the population's other
  releases as one release of that guarantee (so a Pufferfish plan with nothing);
* a release made with a Theta fitted privately (``fit_markov(private=EPS)``, recorded in the
  entry's ``fit``) counts the fit as one more release of its units, once however many releases
  use that fit: EPS-DP in a DP total, and with one pure Pufferfish release (PP, delta = 0)
  per unit PP(eps + EPS) (the fit is EPS-DP under the replacement of a unit's traces and the
  release answers each unit from its own data: with units independent under every prior the
  two compose additively, Kifer & Machanavajjhala 2014); with any other guarantee the total
  is refused as uncomposed. A fit on the exact counts of released units is refused at the
  release (:func:`puffer.publish.release.fit_on_release`).

The rule. A release is refused when, after it, a population it belongs to has no total while
some release of that population claims a guarantee, unless ``allow_uncomposed`` -- recorded in
that entry and covering that release only: the next release on those units needs its own
allowance. ``budget`` caps the eps of every population the release belongs to.

What a ledger cannot see: releases recorded in another ledger (another folder's default
ledger, another machine), or the same people under other ids. Keep one ledger per
population of people; setting ``PUFFER_LEDGER`` makes it the default of every release and
refuses a release into any other ledger (:func:`puffer.publish.ledger.ledger_path`, checked by
:func:`puffer.publish.release.begin_release`, which every engine opens its release with).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..guarantees import round_up
from .ledger import release_states
from .unitsets import load_units

__all__ = ["unit_totals", "populations", "check_new_release", "unit_label", "counted_releases", "private_fits"]

_DP = ("PureDP", "ApproxDP", "ZCDP", "GDP", "RDP")
_E1 = "parallel composition over disjoint independent units (Pierquin et al. 2024, Prop E.1)"
# A fit eps_f-DP under the replacement of one unit's traces, then one eps-PP release per unit
# whose answer for unit i depends on unit i's data and noise only (both chosen after the fit):
# with units independent under every prior, P(fit, answers | s_i) is, up to the factor
# max / min over unit i's traces of P(fit | traces) <= e^eps_f, the answers' law given s_i
# times terms free of s_i, so the pair is (eps_f + eps)-PP (Kifer & Machanavajjhala 2014:
# differential privacy as Pufferfish with independent records).
_FIT_THEOREM = ("a private fit (eps_fit-DP per unit, fit_markov(private=)) then one Pufferfish release per unit: "
                "eps_fit + eps (units independent under every prior; Kifer & Machanavajjhala 2014, DP as "
                "Pufferfish with independent records)")


def unit_label(e: dict[str, Any]) -> str:
    """The unit column a release named, or "(row)" for rows that name no unit."""
    u = e.get("unit")
    if isinstance(u, dict) and u.get("column"):
        return str(u["column"])
    return "(row)"


def _per_unit(e: dict[str, Any]) -> int:
    """Releases per unit in one entry: one per column for a scalar mechanism, one for a vector."""
    dim = int(e.get("dim") or 1)
    return 1 if dim > 1 else len(e.get("columns") or [1])


def counted_releases(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One pending entry per counted release (a release with its re-runs counts once, if any of
    them may have been published; see the module docstring)."""
    groups: dict[str, dict[str, Any]] = {}
    for rid, st in release_states(entries).items():
        e = st["entry"]
        root = e.get("rerun_of") or rid
        g = groups.setdefault(root, {"entry": None, "first": e, "counted": False})
        if rid == root:
            g["entry"] = e
        if st["status"] != "aborted":
            g["counted"] = True
    return [g["entry"] or g["first"] for g in groups.values() if g["counted"]]


def private_fits(items: list[dict[str, Any]]) -> dict[str, float]:
    """The private fits (``fit_markov(private=EPS)``) of the releases ``items`` made with a
    fitted Theta: fit id -> its eps. A fit is one release of its units, whatever the number of
    releases made with it; it is counted in the total of every population of those releases
    (the safe side: the fit's units are taken to include the released ones)."""
    out: dict[str, float] = {}
    for e in items:
        fit = e.get("fit")
        pf = fit.get("private") if isinstance(fit, dict) else None
        if isinstance(pf, dict) and "id" in pf:
            out[str(pf["id"])] = float(pf["eps"])
    return out


def _collapse_series(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the releases with each planned series' windows replaced by one release of the plan's
    guarantee, the series found: plan id, digest, windows counted, theorem)."""
    out: list[dict[str, Any]] = []
    found: dict[str, dict[str, Any]] = {}
    for e in items:
        s = e.get("series")
        if not isinstance(s, dict):
            out.append(e)
            continue
        pid = str(s.get("plan_id"))
        if pid not in found:
            prov = (e.get("guarantee") or {}).get("provenance") if isinstance(e.get("guarantee"), dict) else None
            found[pid] = {"plan_id": pid, "digest": s.get("digest"), "windows": [], "of": s.get("windows"),
                          "theorem": prov.get("theorem") if isinstance(prov, dict) else None}
            # every window's guarantee is the plan's (checked when it was released)
            out.append({"release_id": f"series {pid}", "columns": [None], "dim": 1, "guarantee": e.get("guarantee"),
                        "series": s})
        else:   # (the safe side, should windows ever differ: the largest eps, no guarantee over one)
            item = next(x for x in out if isinstance(x.get("series"), dict) and x["series"].get("plan_id") == pid
                        and x["release_id"] == f"series {pid}")
            g = e.get("guarantee")
            if g is None or (item["guarantee"] is not None and (_eps(g) or math.inf) > (_eps(item["guarantee"]) or 0.0)):
                item["guarantee"] = g
        found[pid]["windows"].append(s.get("window"))
    for f in found.values():
        f["windows"] = sorted(f["windows"])
    return out, list(found.values())


def _series_theorem(found: list[dict[str, Any]]) -> str:
    return "; ".join(f"series {f['plan_id']}: its {len(f['windows'])} published window(s) of {f['of']} counted once "
                     f"with the plan's guarantee for all windows together ({f['theorem'] or 'its ledger record'})"
                     for f in found) + "; "


def _total(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The total over one population's releases: {"guarantee": dict or None, "theorem"/"reason", "releases"}."""
    ids = [e.get("release_id") for e in items]
    fits = private_fits(items)          # before the series collapse (a window keeps its fit)
    items, found = _collapse_series(items)
    out = _total_collapsed(items, ids, fits)
    if found:
        out["series"] = found
        if "theorem" in out:
            out["theorem"] = _series_theorem(found) + out["theorem"]
        elif out.get("guarantee") is None:
            out["reason"] = (f"{out['reason']}: the windows of series {', '.join(f['plan_id'] for f in found)} count "
                             "as one release, and no theorem composes a series with another release on its units")
    return out


def _total_collapsed(items: list[dict[str, Any]], ids: list[Any], fits: dict[str, float]) -> dict[str, Any]:
    from ..guarantees import guarantee_from_dict

    n = sum(_per_unit(e) for e in items) + len(fits)
    gs = [e.get("guarantee") for e in items]
    if any(g is None for g in gs):
        return {"releases": n, "release_ids": ids, "guarantee": None,
                "reason": "no total guarantee: a release with uncalibrated noise (no guarantee) touches these units"}
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
            for eps_fit in fits.values():           # each private fit once (pure eps-DP per unit)
                acc.add(guarantee_from_dict({"type": "PureDP", "eps": eps_fit}))
            tot = acc.total()
        except (NotComposableError, ParameterError) as exc:
            return {"releases": n, "release_ids": ids, "guarantee": None,
                    "reason": f"no total guarantee: {n} releases on the same units and the accountant cannot "
                              f"compose them ({exc})"}
        return {"releases": n, "release_ids": ids, "guarantee": tot.to_dict(),
                "theorem": "sequential composition (puffer.accounting, Guerra-Balboa et al. 2024); " + _E1}
    if n == 1:
        return {"releases": 1, "release_ids": ids, "guarantee": gs[0], "theorem": "one release per unit; " + _E1}
    if fits and n - len(fits) == 1 and gd and gd[0].get("type") == "PP" and float(gd[0].get("delta") or 0.0) == 0.0:
        # one Pufferfish release per unit made with a Theta from private fits: eps + the fits' eps
        eps = round_up(float(gd[0]["eps"]) + sum(fits.values()))
        return {"releases": n, "release_ids": ids, "guarantee": {**gd[0], "eps": eps},
                "theorem": _FIT_THEOREM + "; " + _E1}
    return {"releases": n, "release_ids": ids, "guarantee": None,
            "reason": f"no total guarantee: {n} releases on the same units; Pufferfish guarantees "
                      f"({', '.join(sorted(t for t in types if t))}) have no known sequential composition "
                      "(Pierquin et al. 2024, App. E.1)"}


def _masks(sets: list[np.ndarray]) -> list[tuple[int, int]]:
    """(bit mask of the releases, number of units) for each distinct set of releases that touch
    a unit, over the sorted unit-hash arrays ``sets`` (release k = bit k)."""
    sizes = [s.size for s in sets]
    if not sum(sizes):
        return []
    cat = np.concatenate(sets)
    idx = np.repeat(np.arange(len(sets), dtype=np.int64), sizes)
    order = np.argsort(cat, kind="stable")
    cat, idx = cat[order], idx[order]
    _, start = np.unique(cat, return_index=True)
    words = (len(sets) + 63) // 64
    bits = np.zeros((cat.size, words), dtype=np.uint64)
    bits[np.arange(cat.size), idx // 64] = np.left_shift(np.uint64(1), (idx % 64).astype(np.uint64))
    per_unit = np.bitwise_or.reduceat(bits, start, axis=0)
    rows, counts = np.unique(per_unit, axis=0, return_counts=True)
    out = []
    for row, c in zip(rows, counts):
        m = 0
        for w, v in enumerate(row.tolist()):
            m |= int(v) << (64 * w)
        out.append((m, int(c)))
    return out


def populations(releases: list[dict[str, Any]], units: list[np.ndarray | None]) -> list[dict[str, Any]]:
    """The populations of units of ``releases`` (counted pending entries; ``units[k]``: the sorted
    unit hashes of release k, None for every unit): a list of ``{"members": [release indices],
    "units": count or None (every unit), "note"}``, maximal sets only."""
    schemes = {((r.get("units") or {}).get("secret"), (r.get("units") or {}).get("hash"))
               for r, u in zip(releases, units) if u is not None}
    note = None
    if len(schemes) > 1:  # hashes under different secrets or schemes cannot be compared: taken to overlap
        units = [None] * len(units)
        note = ("unit sets hashed under different unit secrets or hash schemes cannot be compared, so every release "
                "is taken to touch every unit")
    every = [k for k, u in enumerate(units) if u is None]
    hashed = [k for k, u in enumerate(units) if u is not None]
    if not hashed:
        return [{"members": every, "units": None, "note": note}] if every else []
    masks = _masks([units[k] for k in hashed])  # type: ignore[misc]  # hashed: not None
    masks.sort(key=lambda mc: -bin(mc[0]).count("1"))
    kept: list[tuple[int, int]] = []
    for m, c in masks:
        if not any(m & k == m for k, _ in kept):
            kept.append((m, c))
    out = []
    for m, c in kept:
        members = sorted(every + [hashed[j] for j in range(len(hashed)) if m >> j & 1])
        out.append({"members": members, "units": c, "note": note})
    return out


def _label(items: list[dict[str, Any]]) -> str:
    return " + ".join(sorted({unit_label(e) for e in items}))


def _populated(entries: list[dict[str, Any]], ledger: str | None, new: dict[str, Any] | None = None,
               new_units: np.ndarray | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rels = counted_releases(entries)
    if new is not None:
        rels.append(new)
    units = []
    for e in rels:
        if e is new:
            units.append(new_units)
            continue
        u = e.get("units")
        if isinstance(u, dict) and u.get("kind") == "ids" and "ids" not in u and ledger is None:
            raise ParameterError("ledger", None, "the ledger's path: a unit set of this ledger is kept beside it")
        units.append(load_units(e, ledger or ""))
    return rels, populations(rels, units)


def _summary(rels: list[dict[str, Any]], pop: dict[str, Any]) -> dict[str, Any]:
    items = [rels[k] for k in pop["members"]]
    tot = _total(items)
    out = {**tot, "units": pop["units"] if pop["units"] is not None else "all",
           "unit_columns": sorted({unit_label(e) for e in items})}
    if pop["note"]:
        out["note"] = pop["note"]
    return out


def unit_totals(entries: list[dict[str, Any]], *, ledger: str | None = None) -> dict[str, Any]:
    """Population label -> its total (see the module docstring): ``{"guarantee", "theorem" or
    "reason", "releases", "release_ids", "units" (how many units have exactly this set of
    releases, or "all"), "unit_columns"}``. The label names the unit columns of its releases
    ("(row)": rows that name no unit), numbered when several populations share them.
    ``ledger``: the ledger's path, needed when a unit set is kept in a side file."""
    rels, pops = _populated(entries, ledger)
    out: dict[str, Any] = {}
    for pop in sorted(pops, key=lambda p: (_label([rels[k] for k in p["members"]]), p["members"])):
        label = _label([rels[k] for k in pop["members"]])
        key, n = label, 1
        while key in out:
            n += 1
            key = f"{label} #{n}"
        out[key] = _summary(rels, pop)
    return out


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
                      budget: Any = None, units: np.ndarray | None = None, ledger: str | None = None,
                      populated: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
                      ) -> dict[str, Any]:
    """Refuse ``new`` (its pending entry's fields; ``units``: its sorted unit hashes, None for
    every unit) if, after it, a population it belongs to has no total guarantee while one of its
    releases claims one (unless ``allow_uncomposed``), or a total's eps exceeds ``budget``.
    Returns the composition recorded in the entry: the populations ``new`` belongs to, with
    the worst first. A re-run of a release that already counts changes nothing.
    ``populated``: (releases, populations) with ``new`` last, as :func:`populations` gives them,
    computed by the caller (the ledger's index, :mod:`puffer.publish.index`); ``entries`` is
    then not read."""
    if populated is not None:
        rels, pops = populated
        return _decide(rels, pops, allow_uncomposed, budget)
    root = new.get("rerun_of")
    if root is not None and any(e.get("release_id") == root for e in counted_releases(entries)):
        return {"rerun_of": root, "note": RERUN_NOTE}
    if root is not None:  # re-run of a release that does not count yet (aborted): it counts now
        new = {**new, "release_id": root}
    rels, pops = _populated(entries, ledger, new, units)
    return _decide(rels, pops, allow_uncomposed, budget)


#: the composition a re-run of a counted release records
RERUN_NOTE = "a re-run publishes the recorded bytes again: the totals do not change"


def _decide(rels: list[dict[str, Any]], pops: list[dict[str, Any]], allow_uncomposed: bool, budget: Any
            ) -> dict[str, Any]:
    """The rule of :func:`check_new_release` over the populations ``pops`` of ``rels`` (the new
    release last)."""
    k_new = len(rels) - 1
    if budget is not None:
        b = float(budget)
        if not math.isfinite(b) or b <= 0:
            raise ParameterError("budget", budget, "a finite eps budget > 0")
    mine = []
    for p in pops:
        if k_new not in p["members"]:
            continue
        t = _summary(rels, p)
        mine.append(t)
        label = " + ".join(t["unit_columns"])
        claimed = any(rels[k].get("guarantee") is not None for k in p["members"])
        if t["guarantee"] is None and claimed and not allow_uncomposed:
            raise ParameterError("allow_uncomposed", False,
                                 f"a release that keeps a total guarantee for its units ({label}, "
                                 f"{t['units']} unit(s)): after it, {t['reason']}. Pass allow_uncomposed=True "
                                 "(--allow-uncomposed) to release anyway; the allowance is recorded in this "
                                 "release's entry and covers it alone")
        if budget is not None:
            eps = _eps(t["guarantee"])
            if eps is None:
                raise ParameterError("budget", budget, f"units whose total has an eps ({label}: "
                                     f"{t.get('reason') or t['guarantee']})")
            if eps > float(budget):
                raise ParameterError("budget", budget, f"a total eps within the budget for the units ({label}) "
                                     f"(the release would make it {eps:g})")
    mine.sort(key=lambda t: (t["guarantee"] is not None, -(_eps(t["guarantee"]) or 0.0)))
    head = mine[0] if mine else {"releases": 0, "guarantee": None, "units": 0, "unit_columns": []}
    return {"unit": " + ".join(head["unit_columns"]), "releases": head["releases"], "total": head["guarantee"],
            **({"theorem": head["theorem"]} if "theorem" in head else {"reason": head.get("reason")}),
            "populations": [{k: v for k, v in t.items() if k != "release_ids"} for t in mine]}


# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "unit_totals": (Ref("pierquin2024", "Prop E.1"),),
    "private_fits": (Ref("kifer2014", "DP as Pufferfish with independent records"),),
}
