"""Calibration of MarkovChainFramework.cost() (issue 22 section 3 item 5): CPU seconds of
fw.w_inf() on the bench's chains against the estimate. CPU seconds (all threads of the
process) are the load-independent cost; the estimate's seconds are CPU seconds / threads.

    PYTHONPATH=python python bench/markov_cost.py [--json FILE]

Writes one row per case: (k, T, |Theta|), operations, CPU s, wall s, estimate s x threads.
The rows are recorded in bench/markov_cost_calibration.json, which tests/test_markov_cost.py
reads to check that the estimates stay within 2x of the measurements.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time

import numpy as np

CASES = [(2, 192, 20), (2, 500, 20), (2, 2000, 1), (2, 2000, 4), (3, 300, 10), (5, 200, 20), (10, 96, 50),
         (10, 48, 200)]


def chains(k: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k), size=(n, k))


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    from puffer.models import markov_chain

    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for k, T, n in CASES:
        fw = markov_chain(chains(k, n), T=T, threads=args.threads)
        est = fw.cost(threads=args.threads)
        c0, t0 = cpu(), time.perf_counter()
        fw.w_inf(progress=False)
        c1, t1 = cpu(), time.perf_counter()
        row = {"k": k, "T": T, "n_theta": n, "operations": est.operations, "cpu_s": round(c1 - c0, 4),
               "wall_s": round(t1 - t0, 4), "estimate_cpu_s": round(est.seconds * args.threads, 4)}
        rows.append(row)
        print(row, flush=True)
    meta = {"nproc": os.cpu_count(), "cpu": platform.processor() or platform.machine(), "threads": args.threads,
            "python": platform.python_version(), "numpy": np.__version__}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
