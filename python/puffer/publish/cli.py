"""``puffer noise``, ``puffer clamp``, ``puffer keygen`` and ``puffer ledger verify|checkpoint|show``.

``puffer noise IN OUT --column C (--mechanism FILE | --noise KIND --scale S) [--key PATH]
[--sign PATH] [--ledger L] [--unit COL [--order COL] | --per-unit] [--rerun ID] [--granularity G]``
reads Parquet or CSV in record batches, adds the noise of a mechanism (a framework file as
``puffer run`` reads it, or a plain ``--noise``/``--scale``) keyed by the key file (default:
fresh OS entropy, not re-runnable) as lattice noise (values on a power-of-two lattice with exact
noise, :mod:`puffer.lattice`; ``--float-noise`` for floating-point noise, which is not safe in
floating point), writes Parquet and records the release in the ledger (default
``puffer-ledger.jsonl`` beside OUT), signed with ``--sign``; it prints the ledger's new
checkpoint. ``puffer keygen PATH`` writes a new release key file (0600); ``puffer keygen
--signing PATH`` an Ed25519 signing key (0600) and ``PATH.pub``. ``puffer ledger verify L
[--pub PATH.pub] [--checkpoint C]`` checks the chain, the signatures and that the ledger extends
the checkpoint (exit 0 when intact, 7 naming the first bad entry), and says whether
authenticity was checked; ``puffer ledger checkpoint L`` prints the latest checkpoint (keep it
elsewhere); ``puffer ledger show L [--json]`` prints the releases and, per population of units,
the total guarantee where a theorem gives one, and the series planned in it.

``puffer series plan FRAMEWORK --windows LEN --eps E [--delta D] --out PLAN.json [--sign KEY]``
plans a series over the whole horizon of a Markov-chain framework file (windows of LEN
positions tiling it) and writes the plan file, signed with ``--sign``
(:mod:`puffer.publish.series`); ``puffer noise IN OUT --column C --unit U --order POS --series
PLAN.json --window K [--mechanism FRAMEWORK]`` publishes window K (from 0) with the plan's noise;
``puffer series show PLAN.json [--json]`` verifies a plan file (digest, signature, and its bound
re-derived on its framework) and prints it.

``puffer clamp IN OUT --range A,B`` clamps the noisy columns of a published file, recorded in the
ledger as post-processing of its release.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..errors import ParameterError

__all__ = ["add_parser", "run"]

_ONE_PARAM = {"laplace": "b", "gaussian": "sigma", "cauchy": "gamma", "logistic": "scale", "exponential": "scale"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``puffer noise``, ``puffer clamp``, ``puffer keygen`` and ``puffer ledger`` and their options."""
    p = sub.add_parser("noise", help="publish columns of a Parquet/CSV file with calibrated noise (writes Parquet "
                                     "and a ledger entry)")
    p.add_argument("input", help="input .parquet/.pq or .csv file")
    p.add_argument("output", help="output Parquet file (written to a temporary name, renamed once its ledger "
                                  "entry is durable)")
    p.add_argument("--column", action="append", required=True, dest="columns",
                   help="a column to add noise to (repeat for several)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--mechanism", help="framework file (.toml/.json, the schema of `puffer run`)")
    src.add_argument("--noise", choices=sorted(_ONE_PARAM), help="a plain noise (needs --scale; no guarantee)")
    p.add_argument("--scale", type=float, help="the scale of --noise")
    p.add_argument("--series", metavar="PLAN.json", help="publish one window of a planned series (`puffer series "
                                                         "plan`): the plan's noise; --mechanism, if given, must be "
                                                         "the plan's framework")
    p.add_argument("--window", type=int, metavar="K", help="which window of --series (from 0); --order holds "
                                                           "positions of the plan's horizon")
    p.add_argument("--select", help="which mechanism of the file (a substring of its label; default: the one "
                                    "`puffer run` marks, the least noise for the file's target)")
    rng = p.add_mutually_exclusive_group()
    rng.add_argument("--key", metavar="PATH", help="the path of a key file written by `puffer keygen`, never the "
                                                    "key itself (default: fresh OS entropy; the release then cannot "
                                                    "be re-run)")
    rng.add_argument("--secure", action="store_true", help="lattice noise keyed by OS entropy (no key, never "
                                                           "re-runnable)")
    rng.add_argument("--seed", type=int, help=argparse.SUPPRESS)  # refused with an explanation
    p.add_argument("--granularity", type=float, help="the lattice step of the published values, a power of two "
                                                    "(default: from the sensitivity, noise inflated <= 0.1%%)")
    p.add_argument("--float-noise", action="store_true",
                   help="keyed floating-point noise instead of lattice noise: NOT safe in floating point (only "
                        "for noise families or mechanisms without a lattice law: refused for Laplace and Gaussian; "
                        "recorded in the ledger)")
    p.add_argument("--sign", metavar="PATH", help="sign the ledger entries and checkpoint with this Ed25519 key "
                                                  "(`puffer keygen --signing PATH`); required for a signed ledger")
    p.add_argument("--rerun", metavar="RELEASE_ID", help="reproduce a recorded release (same key, input, options)")
    p.add_argument("--ledger", help="ledger file (default: puffer-ledger.jsonl beside OUT)")
    p.add_argument("--unit", help="privacy-unit column: records are grouped per unit and the framework's query "
                                  "is released once per unit")
    p.add_argument("--order", help="order column of each unit's records (sequence models)")
    p.add_argument("--per-unit", action="store_true", help="each row is already one answer per unit (with "
                                                            "--unit: the unit ids, which must be distinct)")
    p.add_argument("--allow-uncomposed", action="store_true",
                   help="release even if a unit is left without a total guarantee (recorded)")
    p.add_argument("--new-units", action="store_true",
                   help="the unit ids include units never released into this ledger (its registry): declared, "
                        "recorded and counted; without it such a release is refused (re-spelled ids would split "
                        "the totals)")
    p.add_argument("--allow-fit-on-release", action="store_true",
                   help="release with a Theta fitted (fit_markov, without private=) on traces of the released "
                        "units: their exact counts are then a release no total counts (recorded)")
    p.add_argument("--allow-unnoised", action="store_true",
                   help="publish unnoised values when the mechanism needs no noise (sensitivity 0)")
    p.add_argument("--budget", type=float, help="refuse a release that would take a unit's total eps above this")
    p.add_argument("--clamp", nargs="?", const="framework", metavar="LO,HI",
                   help="post-processing (no privacy cost, recorded): clamp the noisy values to the query's range "
                        "from the framework (a Markov sum: [T min v, T max v]), or to LO,HI")
    p.add_argument("--lattice", action="store_true",
                   help="post-processing: round the noisy values to the query's lattice (an integer-valued query)")
    p.add_argument("--batch-size", type=int, default=1 << 18, help="rows per record batch (default 262144)")
    p.add_argument("--nulls", choices=("error", "keep"), default="error", help="what to do with null values")
    p.add_argument("--threads", type=int, help="threads for the noise (default: all cores)")
    p.add_argument("--format", choices=("parquet", "csv"), dest="input_format",
                   help="input format (default: from the extension)")
    p.add_argument("--json", action="store_true", help="print the ledger entry as JSON")

    k = sub.add_parser("keygen", help="write a new 256-bit release key file (mode 0600, never overwritten)",
                       description="Write a new 256-bit release key (PATH), or with --signing an Ed25519 signing "
                                   "key for ledgers (PATH, mode 0600) and its public key (PATH.pub). Nothing is "
                                   "ever overwritten. Keys come from `puffer keygen` only: a key written by hand, a "
                                   "passphrase or anything derived from one can be guessed, and with the key every "
                                   "true value follows; keys that decode as text, compress, or whose bytes take few "
                                   "values are refused.")
    k.add_argument("path", nargs="?", help="where to write the release key file (mode 0600)")
    k.add_argument("--signing", metavar="PATH", help="write an Ed25519 signing key to PATH (mode 0600) and its "
                                                     "public key to PATH.pub, instead of a release key")

    cl = sub.add_parser("clamp", help="clamp the noisy columns of a published file to a range (post-processing, "
                                      "recorded in the ledger)",
                        description="Write OUT: the published file IN with its noisy columns clamped to [A, B], "
                                    "recorded in the ledger as post-processing of IN's release (no privacy cost). "
                                    "Clamped values are biased toward the inside of the range: keep IN for "
                                    "estimates (an average of clamped noisy values is not the data's average).")
    cl.add_argument("input", help="a Parquet file published by `puffer noise`")
    cl.add_argument("output", help="the clamped Parquet file (IN is kept)")
    cl.add_argument("--range", required=True, metavar="A,B", dest="clamp_range",
                    help="the range (either end may be empty: unbounded on that side)")
    cl.add_argument("--column", action="append", dest="columns",
                    help="a noisy column to clamp (repeat for several; default: every noisy column of the release)")
    cl.add_argument("--ledger", help="the release's ledger (default: puffer-ledger.jsonl beside IN)")
    cl.add_argument("--sign", metavar="PATH", help="the ledger's signing key (required for a signed ledger)")
    cl.add_argument("--json", action="store_true", help="print the ledger entry as JSON")

    led = sub.add_parser("ledger", help="verify a release ledger or show its per-unit totals")
    lsub = led.add_subparsers(dest="ledger_cmd", required=True)
    v = lsub.add_parser("verify", help="check the chain, the signatures and the checkpoints (exit 0 intact, 7 "
                                       "naming the first bad entry)")
    v.add_argument("ledger", help="the ledger file (JSON lines written by `puffer noise`)")
    v.add_argument("--pub", metavar="PATH.pub", help="the signer's public key (from `puffer keygen --signing`): "
                                                     "every entry must carry its valid signature; without it, "
                                                     "authenticity is not checked")
    v.add_argument("--checkpoint", metavar="FILE", help="a checkpoint kept elsewhere (`puffer ledger checkpoint L > "
                                                        "FILE`): the ledger must extend it (detects cut entries)")
    v.add_argument("--head", help="a head hash kept elsewhere: the ledger must end with it")
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    c = lsub.add_parser("checkpoint", help="print the latest checkpoint of a ledger (keep a copy elsewhere)")
    c.add_argument("ledger", help="the ledger file")
    c.add_argument("--sign", metavar="PATH", help="the signing key, to write a first checkpoint for a signed "
                                                  "ledger that has none (written before checkpoints existed)")
    se = sub.add_parser("series", help="plan a series of releases on one chain (a signed plan file for `puffer noise "
                                       "--series`)")
    ssub = se.add_subparsers(dest="series_cmd", required=True)
    sp = ssub.add_parser("plan", help="plan the noise of every window of a series over a Markov chain's horizon "
                                      "and write the plan file")
    sp.add_argument("framework", help="framework file (.toml/.json, the schema of `puffer run`): a Markov chain "
                                      "whose T is the whole horizon")
    sp.add_argument("--windows", type=int, required=True, metavar="LEN", help="window length in positions (it "
                                                                               "must divide T)")
    sp.add_argument("--eps", type=float, required=True, help="the eps of all windows together")
    sp.add_argument("--delta", type=float, default=0.0, help="the delta of all windows together (default 0)")
    sp.add_argument("--out", required=True, metavar="PLAN.json", help="the plan file to write (never overwritten)")
    sp.add_argument("--sign", metavar="PATH", help="sign the plan with this Ed25519 key (`puffer keygen --signing "
                                                  "PATH`); a signed ledger takes plans signed by its own key only")
    sp.add_argument("--json", action="store_true", help="print the plan file's object as JSON")
    ss = ssub.add_parser("show", help="verify a plan file (digest, signature, plan, its bound re-derived on its "
                                      "framework) and print it")
    ss.add_argument("plan", help="the plan file")
    ss.add_argument("--json", action="store_true", help="print the plan file's object as JSON")
    s = lsub.add_parser("show", help="releases and the total guarantee per population of privacy units")
    s.add_argument("ledger", help="the ledger file")
    s.add_argument("--pub", metavar="PATH.pub", help="verify the signatures with the signer's public key first")
    s.add_argument("--checkpoint", metavar="FILE", help="verify that the ledger extends this checkpoint first")
    s.add_argument("--json", action="store_true", help="print the report as JSON (stable, documented in "
                                                       "puffer.publish.report)")


def run(args: argparse.Namespace) -> int:
    """Run ``puffer noise``, ``clamp``, ``keygen`` or ``ledger``; returns the exit code."""
    if args.cmd == "keygen":
        return _keygen(args)
    if args.cmd == "ledger":
        return _ledger(args)
    if args.cmd == "series":
        return _series(args)
    if args.cmd == "clamp":
        return _clamp(args)
    return _noise(args)


def _series(args: argparse.Namespace) -> int:
    from .report import gtext
    from .series import SeriesFile, write_plan

    if args.series_cmd == "plan":
        env = write_plan(args.framework, args.out, windows=args.windows, eps=args.eps, delta=args.delta,
                         signing_key=args.sign)
        sf = SeriesFile(args.out)   # read back: what `puffer noise --series` will check
    else:
        sf = SeriesFile(args.plan)
        sf.verify()                 # the bound re-derived from its framework (a progress line past a second)
        env = sf.data
    if args.json:
        json.dump(env, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    sc = env["scales"]
    lo, hi = min(sc), max(sc)
    verb = "wrote" if args.series_cmd == "plan" else "verified"
    print(f"puffer series: {verb} plan {sf.plan_id} ({sf.path}): {len(sf.windows)} windows of "
          f"{env['window_length']} positions over T = {env['horizon']}; Laplace scale per window "
          + (f"{lo:.6g}" if lo == hi else f"{lo:.6g} .. {hi:.6g}") + f"; guarantee of all windows together "
          f"{gtext(env['guarantee'])} by {env['theorem']}; digest {sf.digest}; "
          + (f"signed by key {sf.signer}" if sf.signer else "unsigned")
          + ("" if sf.verified is None else f"; bound re-derived on its framework: certified eps "
             f"{sf.verified['eps']:.6g} <= {env['guarantee']['eps']}"))
    return 0


def _range(text: str, name: str) -> tuple[float | None, float | None]:
    """LO,HI (numbers; either may be empty: unbounded) of ``--clamp`` / ``--range``."""
    parts = text.split(",")
    try:
        out = tuple(None if p.strip() == "" else float(p) for p in parts)
    except ValueError:
        raise ParameterError(name, text, "LO,HI (numbers; either may be empty: unbounded)") from None
    if len(out) != 2:
        raise ParameterError(name, text, "LO,HI (two numbers separated by a comma)")
    return out[0], out[1]


def _clamp(args: argparse.Namespace) -> int:
    from .engines.file import clamp_file
    from .ledger import canonical

    entry = clamp_file(args.input, args.output, _range(args.clamp_range, "--range"), columns=args.columns,
                       ledger=args.ledger, signing_key=args.sign)
    if args.json:
        sys.stdout.write(canonical(entry).decode("ascii") + "\n")
    else:
        lo, hi = entry["post_processing"][0]["clamp"]
        print(f"puffer clamp: {entry['rows']} rows of {args.output}, columns {entry['columns']} clamped to "
              f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]: post-processing of release "
              f"{entry['of_release']}, recorded in the ledger (no privacy cost; clamped values are biased, keep "
              f"{args.input} for estimates)")
    return 0


def _keygen(args: argparse.Namespace) -> int:
    from .keys import keygen
    from .signing import signing_keygen

    if (args.path is None) == (args.signing is None):
        raise ParameterError("path", args.path, "either PATH (a release key) or --signing PATH (a signing key)")
    if args.signing is not None:
        sk = signing_keygen(args.signing)
        print(f"puffer keygen: wrote an Ed25519 signing key to {args.signing} (mode 0600) and its public key to "
              f"{args.signing}.pub, key id {sk.key_id}. Keep the signing key secret; give the .pub file to whoever "
              "verifies the ledger (`puffer ledger verify L --pub PATH.pub`).")
        return 0
    k = keygen(args.path)
    print(f"puffer keygen: wrote a 256-bit key to {args.path} (mode 0600), key id {k.key_id}. Keep it secret; "
          "anyone holding it and a ledger can remove the noise.")
    return 0


def _ledger(args: argparse.Namespace) -> int:
    from .ledger import Ledger, canonical, checkpoint
    from .report import ledger_report, print_report, verify_lines

    if not os.path.isfile(args.ledger):
        raise ParameterError("ledger", args.ledger, "an existing ledger file")
    if args.ledger_cmd == "verify":
        v = Ledger(args.ledger).verify(head=args.head, checkpoint=args.checkpoint, pub=args.pub)
        if args.json:
            json.dump(v, sys.stdout, indent=1, sort_keys=True)
            sys.stdout.write("\n")
        else:
            print("\n".join(verify_lines(v)))
        return 0
    if args.ledger_cmd == "checkpoint":
        cp = checkpoint(args.ledger, signing_key=args.sign)
        sys.stdout.write(canonical(cp).decode("ascii") + "\n")
        return 0
    rep = ledger_report(args.ledger, pub=args.pub, checkpoint=args.checkpoint)
    if args.json:
        json.dump(rep, sys.stdout, indent=1, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        print_report(rep, sys.stdout)
    return 0


def _noise(args: argparse.Namespace) -> int:
    from .engines.file import noise_file
    from .ledger import canonical, default_ledger_path
    from .preamble import ledger_path
    from .report import gtext as _gtext

    if args.series is not None:
        if args.window is None:
            raise ParameterError("--window", None, "the window of --series to publish (from 0)")
        if args.noise is not None:
            raise ParameterError("--noise", args.noise, "no --noise with --series (the plan fixes the noise)")
    elif args.window is not None:
        raise ParameterError("--window", args.window, "no --window without --series PLAN.json")
    elif args.noise is None and args.mechanism is None:
        raise ParameterError("--mechanism", None, "a framework file (--mechanism), a plain --noise, or --series")
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
    ledger = ledger_path(args.ledger, default_ledger_path(args.output))
    clamp: Any = None
    if args.clamp == "framework":
        clamp = True
    elif args.clamp is not None:
        clamp = _range(args.clamp, "--clamp")
    entry = noise_file(args.input, args.output, args.columns, mechanism, key=args.key, secure=args.secure,
                       granularity=args.granularity, float_noise=args.float_noise,
                       select=args.select, ledger=args.ledger, unit=args.unit, order=args.order, per_unit=args.per_unit,
                       rerun=args.rerun, allow_uncomposed=args.allow_uncomposed, allow_unnoised=args.allow_unnoised,
                       budget=args.budget, batch_size=args.batch_size, nulls=args.nulls, threads=args.threads,
                       input_format=args.input_format, signing_key=args.sign, clamp=clamp, lattice=args.lattice,
                       new_units=args.new_units, series=args.series, window=args.window,
                       allow_fit_on_release=args.allow_fit_on_release)
    from .ledger import checkpoint

    cp = checkpoint(ledger, signing_key=args.sign)  # (the signing key lets the check use the ledger's index)
    if args.json:
        json.dump({**entry, "checkpoint": cp}, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    else:
        g = entry["guarantee"]
        gtxt = "no guarantee (uncalibrated noise)" if g is None else _gtext(g)
        comp = entry.get("composition") or {}
        tot = comp.get("total")
        if "rerun_of" in comp:
            ttxt = f"; a re-run of {comp['rerun_of']}: the totals do not change"
        elif comp:
            ttxt = f"; total for its units ({comp.get('unit')}): " + (
                f"{_gtext(tot)} by {comp.get('theorem')}" if tot is not None else str(comp.get("reason")))
        else:
            ttxt = ""
        if entry.get("series"):
            sr = entry["series"]
            ttxt = f"; series {sr['plan_id']} window {sr['window']} of {sr['windows']}" + ttxt
        key = entry["key"]
        ktxt = ("fresh OS entropy (not re-runnable)" if key["source"] == "os-entropy" else f"key id {key['key_id']}")
        print(f"puffer noise: release {entry['release_id']}: {entry['rows']} rows, columns {entry['columns']}, "
              f"{entry['label']}, scale {entry['scale']}; {gtxt}{ttxt}; {ktxt}; ledger {ledger}")
        signed = f"signed by key {cp['signer']['key_id']}" if cp.get("signer") else "unsigned"
        print(f"checkpoint ({signed}; keep a copy where the ledger's writers cannot reach it, and check with "
              f"`puffer ledger verify {ledger} --checkpoint FILE`):")
        print(canonical(cp).decode("ascii"))
    return 0
