"""``puffer noise IN OUT --column x [--column y] (--mechanism FILE | --noise KIND --scale S) ...``

Reads Parquet or CSV in record batches, adds the noise of a mechanism (a framework file as
``puffer run`` reads it, or a plain ``--noise``/``--scale``), writes Parquet and appends a
ledger entry (default ``puffer-ledger.jsonl`` in the output's folder). The ledger entry is
printed with ``--json``; a one-line summary otherwise. Progress on stderr when it is a terminal.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import ParameterError

_ONE_PARAM = {"laplace": "b", "gaussian": "sigma", "cauchy": "gamma", "logistic": "scale", "exponential": "scale"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("noise", help="add calibrated noise to columns of a Parquet/CSV file (writes Parquet "
                                     "and a ledger entry)")
    p.add_argument("input", help="input .parquet/.pq or .csv file")
    p.add_argument("output", help="output Parquet file (written to a temporary name, renamed at the end)")
    p.add_argument("--column", action="append", required=True, dest="columns",
                   help="a column to add noise to (repeat for several)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--mechanism", help="framework file (.toml/.json, the schema of `puffer run`)")
    src.add_argument("--noise", choices=sorted(_ONE_PARAM), help="a plain noise (needs --scale; no guarantee)")
    p.add_argument("--scale", type=float, help="the scale of --noise")
    p.add_argument("--select", help="which mechanism of the file (a substring of its label; default: the "
                                    "first one `puffer run` lists)")
    rng = p.add_mutually_exclusive_group()
    rng.add_argument("--seed", type=int, help="integer seed (reproducible output); default: 128 bits of OS "
                                              "entropy, not stored")
    rng.add_argument("--secure", action="store_true", help="exact lattice noise from OS entropy (no seed)")
    p.add_argument("--ledger", help="ledger file (JSON lines; default: puffer-ledger.jsonl beside OUT)")
    p.add_argument("--batch-size", type=int, default=1 << 18, help="rows per record batch (default 262144)")
    p.add_argument("--nulls", choices=("error", "keep"), default="error", help="what to do with null values")
    p.add_argument("--threads", type=int, help="threads for the noise (default: all cores)")
    p.add_argument("--format", choices=("parquet", "csv"), dest="input_format",
                   help="input format (default: from the extension)")
    p.add_argument("--json", action="store_true", help="print the ledger entry as JSON")


def run(args: argparse.Namespace) -> int:
    from .files import noise_file

    if args.noise is not None:
        if args.scale is None:
            raise ParameterError("--scale", None, f"a scale for --noise {args.noise}")
        if args.select is not None:
            raise ParameterError("--select", args.select, "no --select with --noise")
        mechanism = (args.noise, {_ONE_PARAM[args.noise]: args.scale})
    else:
        if args.scale is not None:
            raise ParameterError("--scale", args.scale, "no --scale with --mechanism (the file calibrates it)")
        mechanism = args.mechanism
    ledger = args.ledger or os.path.join(os.path.dirname(os.path.abspath(args.output)), "puffer-ledger.jsonl")
    entry = noise_file(args.input, args.output, args.columns, mechanism, seed=args.seed, secure=args.secure,
                       select=args.select, ledger=ledger, batch_size=args.batch_size, nulls=args.nulls,
                       threads=args.threads, input_format=args.input_format)
    if args.json:
        json.dump(entry, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    else:
        g = entry["guarantee"]
        gtxt = "no guarantee (uncalibrated noise)" if g is None else json.dumps(
            {k: v for k, v in g.items() if k != "provenance"})
        print(f"puffer noise: {entry['rows']} rows, columns {entry['columns']}, {entry['label']}, "
              f"scale {entry['scale']}; {gtxt}; ledger {ledger}")
    return 0
