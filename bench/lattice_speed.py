#!/usr/bin/env python3
"""Keyed lattice noise against the machine's fill rate (issue 41 item 1), by CPU time, before and
after a change in one run.

    python bench/lattice_speed.py                       # the worktree's build
    python bench/lattice_speed.py --baseline DIR        # DIR: a copy of python/ with an older _core

Each build is measured in its own interpreter (the two cores cannot share one process), the builds
alternating for --rounds rounds; every figure is the best CPU time (process_time, all threads) of
7 calls after a warm-up, over 10^7 values. Rows: the fill ceiling (``ndarray.fill`` of the output
buffer), numpy ``Generator.laplace`` (a fresh array), ``lattice_integers`` (a fresh int64 array: its
pages are zeroed by the kernel on first touch) and ``add_lattice_noise`` into out= (the default
publishing path: input check, snapping, noise) for the rounded Laplace of noise scale 3 and the
discrete Gaussian of sigma 1 (default granularity 2^-10, sensitivity 1), one and two threads.
The fill ceiling is the best over every run (it does not depend on the build), so the "% of
fill" of both builds share one denominator. CPU time adds the threads' time, so the 2-thread rows
show the work per value, not the wall-clock scaling. Prints Markdown rows for bench/RESULTS.md
with the load average at the start and end.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import puffer
from puffer.lattice import add_lattice_noise, lattice_integers, lattice_plan
from puffer.sampling import KeyedStream

def best(fn, rep=7):
    fn()
    b = float("inf")
    for _ in range(rep):
        c0 = time.process_time()
        fn()
        b = min(b, time.process_time() - c0)
    return b

n = 10_000_000
key = bytes(range(32))
buf = np.empty(n)
buf.fill(0.0)
x = np.random.default_rng(0).normal(size=n) * 100
res = {"fill": best(lambda: buf.fill(1.0))}
g = np.random.default_rng(1)
res["numpy laplace"] = best(lambda: g.laplace(0.0, 3.0, size=n))
for name, kind, params in (("rounded Laplace, scale 3", "laplace", {"b": 3.0}),
                           ("discrete Gaussian, sigma 1", "gaussian", {"sigma": 1.0})):
    plan = lattice_plan((kind, params), 1, sensitivity=1.0, norm="coordinate")
    for thr in (1, 2):
        res[f"{name}|integers|{thr}"] = best(lambda: lattice_integers(plan.law, n, rng=KeyedStream(key), threads=thr))
        res[f"{name}|add, out=|{thr}"] = best(
            lambda: add_lattice_noise(x, plan, rng=KeyedStream(key), out=buf, threads=thr))
print(json.dumps(res))
"""


def measure(root: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, root], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="a copy of python/ (the package with an older _core)")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    builds = ([("before", a.baseline)] if a.baseline else []) + [("after", str(ROOT / "python"))]
    load0 = os.getloadavg()
    best: dict[str, dict[str, float]] = {b: {} for b, _ in builds}
    for _ in range(a.rounds):
        for b, root in builds:
            for k, v in measure(root).items():
                best[b][k] = min(best[b].get(k, float("inf")), v)
    load1 = os.getloadavg()
    n = 1e7
    print(f"load average (1 min) {load0[0]:.1f} at the start, {load1[0]:.1f} at the end")
    print("| build | path | law | threads | CPU ms | M values/s (CPU) | % of fill | vs numpy laplace |")
    print("|---|---|---|---|---|---|---|---|")
    # the ceiling does not depend on the build: its best over every run is the denominator
    fill = min(best[b]["fill"] for b, _ in builds)
    for b, _ in builds:
        r = best[b]
        npl = r["numpy laplace"]
        print(f"| {b} | ndarray.fill (ceiling) | - | 1 | {fill * 1e3:.1f} | {n / fill / 1e6:.0f} | 100% | |")
        print(f"| {b} | numpy Generator.laplace | - | 1 | {npl * 1e3:.1f} | {n / npl / 1e6:.0f} | "
              f"{fill / npl:.1%} | 1.00x |")
        for k, v in r.items():
            if "|" not in k:
                continue
            law, path, thr = k.split("|")
            print(f"| {b} | {path} | {law} | {thr} | {v * 1e3:.1f} | {n / v / 1e6:.0f} | {fill / v:.1%} | "
                  f"{npl / v:.2f}x |")


if __name__ == "__main__":
    main()
