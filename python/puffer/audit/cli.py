"""The ``puffer audit FILE`` command: calibrate every mechanism of a framework file and audit it.

``puffer audit FILE``: calibrate every mechanism of a framework file (as ``puffer run`` does)
and audit each one empirically (:func:`puffer.audit.empirical`); prints the table (or JSON),
progress on stderr. Exit code 5 when an audit proves a violation (0 otherwise; the other codes
are those of ``puffer``)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..framework import Framework
    from .report import AuditReport

EXIT_VIOLATION = 5

__all__ = ["add_parser", "run", "audit_config", "EXIT_VIOLATION"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``puffer audit`` subcommand and its options."""
    p: argparse.ArgumentParser = subparsers.add_parser("audit", help="audit every mechanism for a framework file empirically "
                              "(exit code 5 if a violation is proved)")
    p.add_argument("file", help="a TOML/JSON framework description (the schema of 'puffer run')")
    p.add_argument("--n", type=int, default=100_000, help="outputs per secret and per (prior, pair) (default 100000)")
    p.add_argument("--confidence", type=float, default=0.99, help="confidence of each report (default 0.99)")
    p.add_argument("--pairs", choices=("worst", "all"), default="worst",
                   help="audit the worst-case pair only (default) or every prior and pair")
    p.add_argument("--seed", type=int, default=None, help="seed for reproducible audits")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    return p


def audit_config(config: dict[str, Any], *, n: int, confidence: float, pairs: str, seed: Any,
                 progress: bool | None = True) -> tuple[Framework, list[tuple[str, AuditReport]]]:
    """(framework, [(label, AuditReport)]) for a validated framework description: every row
    ``puffer run`` lists (:func:`~puffer.config.build_mechanisms`, then the Markov-quilt rows of
    :func:`~puffer.config.markov_quilt_mechanisms` for a Markov chain), in the same order."""
    from ..config import build_framework, build_mechanisms, markov_quilt_mechanisms, validate_config
    from ..sampling import Stream
    from .empirical import empirical

    config = validate_config(config)
    fw = build_framework(config["model"])
    todo = build_mechanisms(fw, config["target"]) + markov_quilt_mechanisms(fw, config["target"])
    streams = Stream(seed).spawn(len(todo))
    out = []
    for k, (label, make) in enumerate(todo):
        if progress:
            print(f"  .. [{k + 1}/{len(todo)}] calibrating and auditing {label}", file=sys.stderr, flush=True)
        out.append((label, empirical(make(), n=n, confidence=confidence, pairs=pairs, rng=streams[k],
                                     progress=progress)))
    return fw, out


def run(args: argparse.Namespace, out: Any = None) -> int:
    """Run ``puffer audit``; returns the exit code (5 when a violation is proved)."""
    from ..config import load_config

    out = sys.stdout if out is None else out
    config = load_config(args.file)
    fw, reports = audit_config(config, n=args.n, confidence=args.confidence, pairs=args.pairs, seed=args.seed)
    if args.json:
        json.dump({"name": config.get("name"), "framework": repr(fw),
                   "reports": [{"label": lab, **r.to_dict()} for lab, r in reports]}, out, indent=1, default=str)
        out.write("\n")
    else:
        print(f"puffer audit: {config.get('name', args.file)}", file=out)
        print(f"  {fw!r}; {args.n} outputs per secret, pairs={args.pairs}, confidence {args.confidence:g}", file=out)
        head = ["mechanism", "claim", "empirical lower", "estimate", "ratio", "verdict", "samples/s"]
        rows = [[lab, r.describe_claim(), f"{r.lower:.4g}", f"{r.estimate:.4g}", f"{r.ratio:.3f}",
                 "VIOLATED" if r.violated else "ok", f"{r.samples_per_second:.3g}"] for lab, r in reports]
        widths = [max(len(str(t[i])) for t in rows + [head]) for i in range(len(head))]
        line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
        print("\n" + line + "\n" + "-" * len(line), file=out)
        for t in rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)), file=out)
        print("(empirical lower: a lower confidence bound on the true eps from samples of each release; "
              "ratio = lower / claimed; VIOLATED means the samples prove eps > claimed)", file=out)
    return EXIT_VIOLATION if any(r.violated for _, r in reports) else 0
