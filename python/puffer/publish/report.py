"""What a privacy officer signs off: ``puffer ledger show L [--pub PATH.pub] [--checkpoint C] [--json]``.

:func:`ledger_report` verifies the ledger (:meth:`puffer.publish.ledger.Ledger.verified`: chain,
signatures, checkpoints; with ``pub`` every entry must be signed by that key; the file is read
once and the report is built from the entries verified, never from a second read) and describes,
per release, what was published and under which theorem, and per population of units
(:mod:`puffer.publish.totals`) the total guarantee and the theorem that gives it, or why none.

The JSON (``--json``) is stable: fields are only ever added, and ``puffer_ledger_report`` changes
when one changes meaning. Version 1:

``puffer_ledger_report``
    1.
``verify``
    the result of :meth:`~puffer.publish.ledger.Ledger.verify`: ``entries``, ``head``,
    ``signed``, ``signer`` (key id), ``authenticated`` (checked against a public key given),
    ``authenticity`` (a sentence), ``anchors`` (checkpoints checked), ``anchored`` /
    ``unanchored`` (entries a checkpoint kept elsewhere covers / does not), ``pending``,
    ``torn_tail``.
``releases``
    one object per release, in ledger order:

    * ``release_id``, ``status`` (completed, published, unknown, pending, aborted), ``counted``
      (whether the totals count it), ``rerun_of``, ``time``, ``engine`` (file, spark, dask),
      ``signer`` (key id or null);
    * ``framework``: ``class``, ``name``, ``summary`` (one line), ``priors`` (the size of
      Theta), ``secrets``, ``secret_pairs``, ``dim``, ``digest``, ``file`` (the framework file,
      if any); null for uncalibrated noise;
    * ``mechanism``: ``name``, ``label``, ``target`` (the eps, delta, alpha asked for);
    * ``sensitivity``: ``value`` (Delta_G), ``kind``, ``norm``, ``witness`` (the prior and
      secret pair that attain it);
    * ``noise`` (family and parameters), ``scale``, ``guarantee`` (the guarantee with its
      provenance), ``theorem`` (the provenance's theorem), ``post_processing``;
      ``noise_lattice``: the lattice of the published values (granularity, law, padding:
      :meth:`puffer.lattice.LatticePlan.describe`), null for float noise or no noise;
      ``float_noise``: whether keyed floating-point noise was asked for (not safe in floating point);
    * ``unit``: ``column``, ``mode``, ``query``, ``records_per_unit``; ``units``: ``kind``
      ("ids": keyed hashes; "all": rows that name no unit) and ``count``;
    * ``columns``, ``rows``, ``files``: ``input``, ``input_sha256``, ``output``,
      ``output_sha256`` (a Spark/Dask digest is over the released columns, ``digests`` says how);
    * ``key``: ``key_id``, ``source``, ``insecure``; ``nonce``; ``allow_uncomposed``, ``budget``;
      ``fit_on_release``: for a Theta fitted from traces, whether the fit was private (its eps
      and id: counted in the totals) or shared units with the release (``allowed``: by
      ``allow_fit_on_release``), null otherwise.
    * ``unit_registry``: the release's check against the ledger's registry of units
      (:mod:`puffer.publish.registry`: ``registered``, ``new``, ``learned``, ``declared_new``,
      ``absent``, and ``warning`` when its units were mostly new while registered ones were
      absent), null for releases of rows that name no unit or recorded before the registry.
``populations``
    one object per population of units: ``label`` (the unit columns of its releases),
    ``unit_columns``, ``units`` (how many units have exactly this set of releases, or "all"),
    ``releases`` (releases per unit, one per column of a scalar mechanism), ``release_ids``,
    ``guarantee`` (the total, or null), ``theorem`` (what gives it) or ``reason`` (why none).
``units``
    the same totals keyed by label (what ``puffer account LEDGER`` reads).
``series``
    one object per series plan recorded in the ledger (:func:`puffer.publish.series.series_status`):
    ``plan_id``, ``digest``, ``guarantee`` (of all its windows together), ``theorem``,
    ``binding_secret``, ``windows``, ``window_length``, ``horizon``, ``signer`` (the plan's),
    ``published`` (window -> release ids), ``pending`` (windows not released yet), ``totals``
    (the populations holding its releases: ``label``, ``units``, ``guarantee``, ``theorem`` or
    ``reason``). A window release's object in ``releases`` has ``series`` (plan id, window,
    positions, scale).
"""
from __future__ import annotations

import json
import math
import os
from typing import Any

from ..errors import ParameterError
from .ledger import Ledger, release_states
from .totals import counted_releases, unit_totals

__all__ = ["ledger_report", "print_report", "verify_lines", "REPORT_VERSION"]

REPORT_VERSION = 1


def _framework(e: dict[str, Any]) -> dict[str, Any] | None:
    d = e.get("framework_description")
    if not isinstance(d, dict):
        return None
    s = d.get("summary") or {}
    model = (d.get("config") or {}).get("model") or {}
    return {"class": s.get("class"), "name": s.get("name") or (d.get("config") or {}).get("name"),
            "summary": s.get("repr") or d.get("repr") or (f"{model.get('kind')} (framework file)" if model else None),
            "priors": s.get("priors", len(d["priors"]) if isinstance(d.get("priors"), list) else None),
            "secrets": s.get("secrets", d.get("secrets")), "secret_pairs": s.get("secret_pairs"),
            "dim": s.get("dim", e.get("dim")), "digest": d.get("digest"), "file": d.get("file")}


def _release(e: dict[str, Any], status: str, counted: bool) -> dict[str, Any]:
    g = e.get("guarantee")
    prov = g.get("provenance") if isinstance(g, dict) else None
    units: dict[str, Any] = e["units"] if isinstance(e.get("units"), dict) else {"kind": "all"}
    unit: dict[str, Any] = e["unit"] if isinstance(e.get("unit"), dict) else {}
    key = e.get("key") or {}
    return {
        "release_id": e.get("release_id"), "status": status, "counted": counted, "rerun_of": e.get("rerun_of"),
        "time": e.get("time"), "engine": e.get("path"), "signer": (e.get("signer") or {}).get("key_id"),
        "framework": _framework(e),
        "mechanism": None if e.get("mechanism") is None else {"name": e.get("mechanism"), "label": e.get("label"),
                                                                "target": e.get("target")},
        "sensitivity": e.get("sensitivity"), "noise": e.get("noise"), "scale": e.get("scale"), "guarantee": g,
        "theorem": prov.get("theorem") if isinstance(prov, dict) else None,
        "post_processing": e.get("post_processing") or [],
        "noise_lattice": e.get("noise_lattice"), "float_noise": (e.get("config") or {}).get("noise") == "float",
        "unit": {k: unit.get(k) for k in ("column", "mode", "query", "records_per_unit")},
        "units": {"kind": units.get("kind"), "count": units.get("count")},
        "columns": e.get("columns"), "rows": e.get("rows"),
        "files": {"input": e.get("input"), "input_sha256": e.get("input_sha256"), "output": e.get("output"),
                  "output_sha256": e.get("output_sha256"), **({"digests": e["digests"]} if "digests" in e else {})},
        "key": {k: key.get(k) for k in ("key_id", "source", "insecure")}, "nonce": e.get("nonce"),
        "allow_uncomposed": bool(e.get("allow_uncomposed")), "budget": e.get("budget"),
        "fit_on_release": e.get("fit_on_release"),
        "unit_registry": e.get("unit_registry"),
        **({"series": {k: e["series"].get(k) for k in ("plan_id", "window", "windows", "positions", "scale")}}
           if isinstance(e.get("series"), dict) else {}),
    }


def ledger_report(path: str | os.PathLike[str], *, pub: Any = None, checkpoint: Any = None) -> dict[str, Any]:
    """What ``puffer ledger show --json`` prints (see the module docstring): verification,
    releases, totals per population. ``pub``/``checkpoint`` as for :func:`~puffer.publish.verify`."""
    led = Ledger(path)
    if not os.path.isfile(led.path):
        raise ParameterError("ledger", os.fspath(path), "an existing ledger file")
    # one read: the report is built from the very entries verified (a file swapped after the
    # check, or between two reads, is never reported on)
    ver, entries = led.verified(pub=pub, checkpoint=checkpoint)
    counted = {e.get("release_id") for e in counted_releases(entries)}
    roots = {rid: (st["entry"].get("rerun_of") or rid) for rid, st in release_states(entries).items()}
    rel = [_release(st["entry"], st["status"], roots[rid] in counted and (st["status"] != "aborted"))
           for rid, st in release_states(entries).items()]
    units = unit_totals(entries, ledger=led.path)
    pops = [{"label": label, **t} for label, t in units.items()]
    from .series import series_status

    return {"puffer_ledger_report": REPORT_VERSION, "verify": ver, "releases": rel, "populations": pops,
            "units": units, "series": series_status(entries, units)}


def verify_lines(v: dict[str, Any]) -> list[str]:
    """The text of ``puffer ledger verify`` for a :meth:`~puffer.publish.ledger.Ledger.verify` result."""
    out = [f"ledger {v['ledger']}: intact, {v['entries']} entries, {v['releases']} completed releases, "
           f"head {v['head']}"]
    out.append(f"  {v['authenticity']}")
    for a in v["anchors"]:
        where = "kept elsewhere" if a["kept_elsewhere"] else f"{a['checkpoint']} (beside the ledger)"
        out.append(f"  extends the checkpoint {where}: {a['entries']} entries, {a['note']}")
    if v["unanchored"]:
        out.append(f"  entries {v['anchored']}..{v['entries'] - 1} are not covered by a checkpoint kept elsewhere "
                   "(--checkpoint): entries cut off the end would not be detected. Keep the output of `puffer "
                   "ledger checkpoint` somewhere the ledger's writers cannot reach")
    for p in v["pending"]:
        out.append(f"  pending without completion: release {p['release_id']} (entry {p['entry']}), output "
                   f"{p.get('output_state')}")
    if v["torn_tail"]:
        out.append(f"  {v['torn_tail']['note']} ({v['torn_tail']['bytes']} bytes)")
    return out


def _num(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) and math.isfinite(x) else str(x)


def gtext(g: Any) -> str:
    """A guarantee in one line: its type and parameters (no provenance)."""
    if g is None:
        return "none"
    first = [k for k in ("alpha", "eps", "delta") if k in g]
    keys = first + sorted(k for k in g if k not in first and k not in ("type", "provenance", "granularity", "domain"))
    params = ", ".join(f"{k}={_num(g[k])}" for k in keys if g[k] is not None)
    return f"{g.get('type')}({params})"


def _witness(w: Any) -> str:
    if isinstance(w, dict):
        parts = []
        if "theta" in w:
            parts.append(f"prior {w['theta']}")
        if "pair" in w and isinstance(w["pair"], list) and len(w["pair"]) == 2:
            parts.append(f"secret pair {w['pair'][0]} vs {w['pair'][1]}")
        rest = {k: v for k, v in w.items() if k not in ("theta", "pair")}
        if rest:
            parts.append(json.dumps(rest, default=str))
        return ", ".join(parts)
    return json.dumps(w, default=str)


def _release_lines(k: int, r: dict[str, Any]) -> list[str]:
    signed = f"signed by key {r['signer']}" if r["signer"] else "unsigned"
    flags = (["re-run of " + str(r["rerun_of"])] if r["rerun_of"] else []) + \
            (["allowed without a total (allow_uncomposed)"] if r["allow_uncomposed"] else []) + \
            ([("a private fit on other units than the release's" if (r.get("fit_on_release") or {}).get("private")
               else "Theta fitted on released units without private=") + " (allow_fit_on_release)"]
             if (r.get("fit_on_release") or {}).get("allowed") else []) + \
            (["INSECURE test key"] if r["key"].get("insecure") else []) + ([] if r["counted"] else ["not counted"])
    out = [f"  {k}. {r['release_id']} {r['status']} {r['time']} ({r['engine']}), {signed}"
           + (f"; {'; '.join(flags)}" if flags else "")]
    if r.get("series"):
        sr = r["series"]
        out.append(f"     series {sr['plan_id']}: window {sr['window']} of {sr['windows']} (positions "
                   f"{sr['positions'][0]} .. {sr['positions'][1] - 1}), scale {_num(sr['scale'])}")
    fw = r["framework"]
    if fw is not None:
        theta = f"Theta: {fw['priors']} prior(s)" if fw["priors"] is not None else "Theta: see the framework"
        pairs = f", {fw['secret_pairs']} secret pair(s)" if fw.get("secret_pairs") is not None else ""
        out.append(f"     framework: {fw['summary']}; {theta}{pairs}; digest {fw['digest']}"
                   + (f"; file {fw['file']}" if fw.get("file") else ""))
    m = r["mechanism"]
    if m is not None:
        target = ", ".join(f"{k2}={_num(v)}" for k2, v in (m["target"] or {}).items() if v is not None)
        out.append(f"     mechanism: {m['label']} (target {target or '-'})")
    else:
        out.append("     mechanism: none (uncalibrated noise: no guarantee)")
    s = r["sensitivity"]
    if isinstance(s, dict):
        out.append(f"     Delta_G = {_num(s.get('value'))} ({s.get('kind')}"
                   + (f", norm {s['norm']}" if s.get("norm") is not None else "") + ")"
                   + (f", witness: {_witness(s['witness'])}" if s.get("witness") is not None else ""))
    noise = r["noise"] or {}
    ntext = ", ".join(f"{k2}={_num(v)}" for k2, v in noise.items() if k2 != "family")
    out.append(f"     noise: {noise.get('family', 'none')}({ntext}), scale {_num(r['scale'])}; guarantee "
               f"{gtext(r['guarantee'])}" + (f" ({r['theorem']})" if r["theorem"] else ""))
    lat = r.get("noise_lattice")
    if lat:
        pad = lat.get("padding")
        out.append(f"     published on the lattice 2^{lat['g_exp']} Z: {lat['law']} noise of {_num(lat['scale'])} steps"
                   + (f", padded for {_num(pad['sensitivity'])} (noise x {_num(pad['inflation'])})" if pad else ""))
    elif r.get("float_noise"):
        out.append("     FLOAT noise (asked for with float_noise: not safe in floating point)")
    if r["post_processing"]:
        out.append(f"     post-processing: {json.dumps(r['post_processing'], default=str)}")
    u, us = r["unit"], r["units"]
    who = f"{us['count']} unit(s) by keyed id" if us["kind"] == "ids" else "rows naming no unit (taken as every unit)"
    out.append(f"     unit: {u['column'] or '(row)'} ({u['mode']}: {u['query']}"
               + (f", T={u['records_per_unit']}" if u.get("records_per_unit") else "") + f"); {who}; columns "
               f"{r['columns']}, {r['rows']} output rows")
    reg = r.get("unit_registry")
    if isinstance(reg, dict) and reg.get("new"):
        out.append(f"     units: {reg['new']} new to the ledger ("
                   + ("its first units" if reg.get("learned") else "declared with --new-units") + ")"
                   + (f"; WARNING: {reg['warning']}" if reg.get("warning") else ""))
    f = r["files"]
    out.append(f"     input:  {f['input'] or '(in memory)'} {f['input_sha256']}")
    out.append(f"     output: {f['output'] or '(in memory)'} {f['output_sha256']}")
    out.append(f"     key id {r['key']['key_id']} ({r['key']['source']}), nonce {r['nonce']}")
    return out


def print_report(rep: dict[str, Any], out: Any) -> None:
    """``puffer ledger show`` as text."""
    print("\n".join(verify_lines(rep["verify"])), file=out)
    print(f"releases ({len(rep['releases'])}):", file=out)
    for k, r in enumerate(rep["releases"], 1):
        print("\n".join(_release_lines(k, r)), file=out)
    print(f"populations of units ({len(rep['populations'])}): the total guarantee of every unit in each", file=out)
    for p in rep["populations"]:
        units = "every unit" if p["units"] == "all" else f"{p['units']} unit(s)"
        head = f"  {p['label']}: {units}, {p['releases']} release(s) per unit"
        if p["guarantee"] is None:
            print(f"{head}: {p['reason']}", file=out)
        else:
            print(f"{head}: {gtext(p['guarantee'])} by {p['theorem']}", file=out)
        if p.get("note"):
            print(f"    ({p['note']})", file=out)
    if rep.get("series"):
        print(f"series ({len(rep['series'])}): planned over a horizon, the guarantee of all windows together", file=out)
        for st in rep["series"]:
            print("\n".join(_series_lines(st)), file=out)


def _series_lines(st: dict[str, Any]) -> list[str]:
    """``puffer ledger show``'s lines for one series (:func:`puffer.publish.series.series_status`)."""
    n, done = st["windows"], sorted(int(k) for k in st["published"])
    pend = st["pending"]
    shown = ", ".join(map(str, pend[:10])) + (f", ... ({len(pend)} in all)" if len(pend) > 10 else "")
    listed = ", ".join(map(str, done[:20])) + (" ..." if len(done) > 20 else "")
    out = [f"  series {st['plan_id']} (digest {st['digest']}): {n} windows of {st['window_length']} positions "
           f"over T = {st['horizon']}; guarantee of all windows together {gtext(st['guarantee'])} by "
           f"{st['theorem']}" + (f"; plan signed by key {st['signer']}" if st["signer"] else "; plan unsigned"),
           f"    published: {len(done)} window(s) " + (listed if done else "none"),
           f"    pending: {len(pend)} window(s)" + (f" {shown}" if pend else "")]
    for p in st["totals"]:
        units = "every unit" if p["units"] == "all" else f"{p['units']} unit(s)"
        tot = (f"{gtext(p['guarantee'])} by {p['theorem']}" if p["guarantee"] is not None else str(p["reason"]))
        out.append(f"    total of its units ({p['label']}, {units}): {tot}")
    return out
