"""``puffer noise``, ``puffer keygen`` and ``puffer ledger verify|show``.

``puffer noise IN OUT --column C (--mechanism FILE | --noise KIND --scale S) [--key PATH]
[--ledger L] [--unit COL [--order COL] | --per-unit] [--rerun ID]`` reads Parquet or CSV in record
batches, adds the noise of a mechanism (a framework file as ``puffer run`` reads it, or a plain
``--noise``/``--scale``) keyed by the key file (default: fresh OS entropy, not re-runnable),
writes Parquet and records the release in the ledger (default ``puffer-ledger.jsonl`` beside
OUT). ``puffer keygen PATH`` writes a new key file (0600). ``puffer ledger verify L`` checks the
hash chain (exit 0 when intact, 7 naming the first bad entry); ``puffer ledger show L [--json]``
prints the releases and, per privacy unit, the total guarantee where a theorem gives one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..errors import ParameterError

_ONE_PARAM = {"laplace": "b", "gaussian": "sigma", "cauchy": "gamma", "logistic": "scale", "exponential": "scale"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("noise", help="publish columns of a Parquet/CSV file with calibrated noise (writes Parquet "
                                     "and a ledger entry)")
    p.add_argument("input", help="input .parquet/.pq or .csv file")
    p.add_argument("output", help="output Parquet file (written to a temporary name, renamed once its ledger "
                                  "entry is durable)")
    p.add_argument("--column", action="append", required=True, dest="columns",
                   help="a column to add noise to (repeat for several)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--mechanism", help="framework file (.toml/.json, the schema of `puffer run`)")
    src.add_argument("--noise", choices=sorted(_ONE_PARAM), help="a plain noise (needs --scale; no guarantee)")
    p.add_argument("--scale", type=float, help="the scale of --noise")
    p.add_argument("--select", help="which mechanism of the file (a substring of its label; default: the "
                                    "first one `puffer run` lists)")
    rng = p.add_mutually_exclusive_group()
    rng.add_argument("--key", help="key file written by `puffer keygen` (default: fresh OS entropy; the release "
                                   "then cannot be re-run)")
    rng.add_argument("--secure", action="store_true", help="exact lattice noise from OS entropy (no key)")
    rng.add_argument("--seed", type=int, help=argparse.SUPPRESS)  # refused with an explanation
    p.add_argument("--rerun", metavar="RELEASE_ID", help="reproduce a recorded release (same key, input, options)")
    p.add_argument("--ledger", help="ledger file (default: puffer-ledger.jsonl beside OUT)")
    p.add_argument("--unit", help="privacy-unit column: records are grouped per unit and the framework's query "
                                  "is released once per unit")
    p.add_argument("--order", help="order column of each unit's records (sequence models)")
    p.add_argument("--per-unit", action="store_true", help="each row is already one answer per unit (with "
                                                            "--unit: the unit ids, which must be distinct)")
    p.add_argument("--allow-uncomposed", action="store_true",
                   help="release even if a unit is left without a total guarantee (recorded)")
    p.add_argument("--allow-unnoised", action="store_true",
                   help="publish unnoised values when the mechanism needs no noise (sensitivity 0)")
    p.add_argument("--budget", type=float, help="refuse a release that would take a unit's total eps above this")
    p.add_argument("--batch-size", type=int, default=1 << 18, help="rows per record batch (default 262144)")
    p.add_argument("--nulls", choices=("error", "keep"), default="error", help="what to do with null values")
    p.add_argument("--threads", type=int, help="threads for the noise (default: all cores)")
    p.add_argument("--format", choices=("parquet", "csv"), dest="input_format",
                   help="input format (default: from the extension)")
    p.add_argument("--json", action="store_true", help="print the ledger entry as JSON")

    k = sub.add_parser("keygen", help="write a new 256-bit release key file (mode 0600, never overwritten)")
    k.add_argument("path")

    led = sub.add_parser("ledger", help="verify a release ledger or show its per-unit totals")
    lsub = led.add_subparsers(dest="ledger_cmd", required=True)
    v = lsub.add_parser("verify", help="check the hash chain (exit 0 intact, 7 naming the first bad entry)")
    v.add_argument("ledger")
    v.add_argument("--head", help="the head hash recorded elsewhere (detects entries cut off the end)")
    v.add_argument("--json", action="store_true")
    s = lsub.add_parser("show", help="releases and the total guarantee per privacy unit")
    s.add_argument("ledger")
    s.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    if args.cmd == "keygen":
        return _keygen(args)
    if args.cmd == "ledger":
        return _ledger(args)
    return _noise(args)


def _keygen(args: argparse.Namespace) -> int:
    from .keys import keygen

    k = keygen(args.path)
    print(f"puffer keygen: wrote a 256-bit key to {args.path} (mode 0600), key id {k.key_id}. Keep it secret; "
          "anyone holding it and a ledger can remove the noise.")
    return 0


def ledger_report(path: str) -> dict[str, Any]:
    """What ``puffer ledger show --json`` prints: verification, releases, totals per unit."""
    from .ledger import Ledger, release_states
    from .totals import unit_totals

    led = Ledger(path)
    if not os.path.isfile(led.path):
        raise ParameterError("ledger", path, "an existing ledger file")
    ver = led.verify()
    entries = led.entries()
    rel = []
    for rid, st in release_states(entries).items():
        e = st["entry"]
        rel.append({"release_id": rid, "status": st["status"], "time": e.get("time"), "output": e.get("output"),
                    "unit": (e.get("unit") or {}).get("column"), "columns": e.get("columns"),
                    "mechanism": e.get("mechanism"), "guarantee": e.get("guarantee"),
                    "rerun_of": e.get("rerun_of"), "allow_uncomposed": e.get("allow_uncomposed"),
                    "insecure_key": bool((e.get("key") or {}).get("insecure"))})
    return {"verify": ver, "releases": rel, "units": unit_totals(entries)}


def _gtext(g: Any) -> str:
    if g is None:
        return "none"
    return json.dumps({k: v for k, v in g.items() if k not in ("provenance", "granularity", "domain")})


def print_report(rep: dict[str, Any], out: Any) -> None:
    v = rep["verify"]
    print(f"ledger {v['ledger']}: intact, {v['entries']} entries, head {v['head']}", file=out)
    for p in v["pending"]:
        print(f"  pending without completion: release {p['release_id']} (entry {p['entry']}), output "
              f"{p.get('output_state')}", file=out)
    if v["torn_tail"]:
        print(f"  {v['torn_tail']['note']} ({v['torn_tail']['bytes']} bytes)", file=out)
    print("releases:", file=out)
    for r in rep["releases"]:
        extra = (f", re-run of {r['rerun_of']}" if r["rerun_of"] else "") + \
                (", allowed without total" if r["allow_uncomposed"] else "") + \
                (", INSECURE test key" if r["insecure_key"] else "")
        print(f"  {r['release_id']} {r['status']:9s} {r['time']} unit={r['unit'] or '(row)'} columns={r['columns']} "
              f"{r['mechanism'] or 'uncalibrated noise'}: {_gtext(r['guarantee'])}{extra}", file=out)
    print("total per privacy unit:", file=out)
    for u, t in rep["units"].items():
        if t["guarantee"] is None:
            print(f"  {u}: {t['reason']}", file=out)
        else:
            print(f"  {u}: {_gtext(t['guarantee'])} over {t['releases']} release(s) ({t['theorem']})", file=out)


def _ledger(args: argparse.Namespace) -> int:
    from .ledger import Ledger

    if not os.path.isfile(args.ledger):
        raise ParameterError("ledger", args.ledger, "an existing ledger file")
    if args.ledger_cmd == "verify":
        v = Ledger(args.ledger).verify(head=args.head)
        if args.json:
            json.dump(v, sys.stdout, indent=1, sort_keys=True)
            sys.stdout.write("\n")
        else:
            print(f"ledger {v['ledger']}: intact, {v['entries']} entries, {v['releases']} completed releases, "
                  f"head {v['head']}")
            for p in v["pending"]:
                print(f"  pending without completion: release {p['release_id']} (entry {p['entry']}), output "
                      f"{p['output_state']}")
            if v["torn_tail"]:
                print(f"  {v['torn_tail']['note']} ({v['torn_tail']['bytes']} bytes)")
        return 0
    rep = ledger_report(args.ledger)
    if args.json:
        json.dump(rep, sys.stdout, indent=1, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        print_report(rep, sys.stdout)
    return 0


def _noise(args: argparse.Namespace) -> int:
    from .engines.file import noise_file
    from .ledger import default_ledger_path

    if args.noise is not None:
        if args.scale is None:
            raise ParameterError("--scale", None, f"a scale for --noise {args.noise}")
        if args.select is not None:
            raise ParameterError("--select", args.select, "no --select with --noise")
        mechanism: Any = (args.noise, {_ONE_PARAM[args.noise]: args.scale})
    else:
        if args.scale is not None:
            raise ParameterError("--scale", args.scale, "no --scale with --mechanism (the file calibrates it)")
        mechanism = args.mechanism
    if args.seed is not None:
        from .keys import refuse_seed
        refuse_seed(args.seed)
    ledger = args.ledger or default_ledger_path(args.output)
    entry = noise_file(args.input, args.output, args.columns, mechanism, key=args.key, secure=args.secure,
                       select=args.select, ledger=ledger, unit=args.unit, order=args.order, per_unit=args.per_unit,
                       rerun=args.rerun, allow_uncomposed=args.allow_uncomposed, allow_unnoised=args.allow_unnoised,
                       budget=args.budget, batch_size=args.batch_size, nulls=args.nulls, threads=args.threads,
                       input_format=args.input_format)
    if args.json:
        json.dump(entry, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    else:
        g = entry["guarantee"]
        gtxt = "no guarantee (uncalibrated noise)" if g is None else _gtext(g)
        comp = entry.get("composition") or {}
        tot = comp.get("total")
        ttxt = (f"; total for unit {comp.get('unit')!r}: " + (_gtext(tot) if tot is not None else comp.get("reason", ""))
                ) if comp else ""
        key = entry["key"]
        ktxt = ("fresh OS entropy (not re-runnable)" if key["source"] == "os-entropy" else f"key id {key['key_id']}")
        print(f"puffer noise: release {entry['release_id']}: {entry['rows']} rows, columns {entry['columns']}, "
              f"{entry['label']}, scale {entry['scale']}; {gtxt}{ttxt}; {ktxt}; ledger {ledger}")
    return 0
