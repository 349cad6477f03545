"""The ``puffer partial-demo`` command: the synthetic case study and its Figures 1-3.

``puffer partial-demo``: the synthetic case study of Seeman, Reimherr & Slavkovic (§4) at a small
number of replicates, writing the Figure 1-3 plots and a JSON summary."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register the ``puffer partial-demo`` subcommand and its options."""
    p = subparsers.add_parser("partial-demo", help="partially private data: synthetic case study, Figures 1-3")
    p.add_argument("--out", default="partial-demo", help="output folder for the figures (default ./partial-demo)")
    p.add_argument("--eps", type=float, nargs="+", default=[0.01, 1.0], help="privacy budgets (default 0.01 1)")
    p.add_argument("--replicates", type=int, default=3, help="replicates per method and eps (default 3)")
    p.add_argument("--seed", type=int, default=2026, help="seed of the data and the noise")
    p.add_argument("--steps-per-dim", type=int, default=400, help="MCMC steps per coordinate (WEM)")
    p.add_argument("--no-plots", action="store_true", help="skip the figures (no matplotlib needed)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``puffer partial-demo``; returns the exit code."""
    from .casestudy import run_case_study, summaries, synthetic_data

    t0 = time.perf_counter()
    data = synthetic_data(seed=args.seed)
    print(f"  .. synthetic data: J={data.J} counties x T={data.T} months (+ lag month); "
          "the paper's PA data are not shipped", file=sys.stderr, flush=True)
    study = run_case_study(data, args.eps, args.replicates, steps_per_dim=args.steps_per_dim,
                           rng=np.random.SeedSequence(args.seed))
    summ = summaries(study)
    out = {"eps": study["eps"], "replicates": study["replicates"], "synthetic": True,
           "median_relative_error_pct": {f"{m} eps={e:g}": float(np.median(v)) for (m, e), v in summ["fig2"].items()},
           "contraction_pp": {f"eps={e:g} {w}": v for (e, w), v in summ["fig3"].items()},
           "guarantees": {f"{m} eps={e:g}": r["guarantee"].to_dict() for (m, e), r in study["results"].items()},
           "figures": []}
    if not args.no_plots:
        from .plot import write_figures
        out["figures"] = [str(p) for p in write_figures(study, summ, args.out)]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps(out, indent=1))
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{'method':8s} {'eps':>6s} {'median rel. error %':>20s}")
        for (m, e), v in summ["fig2"].items():
            print(f"{m:8s} {e:6g} {float(np.median(v)):20.3f}")
        for f in out["figures"]:
            print(f"wrote {f}")
    print(f"  .. done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return 0
