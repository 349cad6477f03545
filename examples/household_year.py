"""A year of half-hourly readings: one household's away (0) / home (1) state every half hour for
a year (T = 17,520), as a 2-state Markov chain, and the exact Delta_G of the Wasserstein
mechanism for it (issue 24).

    PYTHONPATH=python python examples/household_year.py [--priors N] [--dask N_WORKERS] [--T T]

Prints the cost estimate first (multiply-adds, peak memory, seconds), then computes Delta_G with
a progress bar and releases the number of home half-hours with Laplace noise on a lattice (puffer.secure). One prior takes
about 2.5 CPU-minutes on a quiet machine and ~0.6 GB by cost() (bench/RESULTS.md, "A year of half-hours"); --priors N adds
N - 1 perturbed chains (the adversary's set Theta; priors stream through the workers, memory
stays that of 2 priors); --dask N runs the priors on a local Dask cluster of N workers
(puffer.dask.w_inf, bitwise the same result).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from puffer.models import markov_chain
from puffer.secure import secure_add_noise


def main() -> None:
    """Run the example (a function: Dask worker processes re-import this file)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--priors", type=int, default=1)
    ap.add_argument("--dask", type=int, default=0)
    ap.add_argument("--T", type=int, default=17_520, help="chain length (default: a year of half-hours)")
    args = ap.parse_args()

    T = args.T
    base = np.array([[0.96, 0.04], [0.03, 0.97]])       # half-hourly: long stays away and at home
    rng = np.random.default_rng(2026)
    trans = [base]
    for _ in range(args.priors - 1):
        p, q = base[0, 1] * rng.uniform(0.7, 1.3), base[1, 0] * rng.uniform(0.7, 1.3)
        trans.append(np.array([[1 - p, p], [q, 1 - q]]))
    fw = markov_chain(np.array(trans), T=T, states=["away", "home"])
    print(fw)
    print("estimate:", fw.cost())

    t0 = time.perf_counter()
    if args.dask:
        from distributed import Client, LocalCluster

        from puffer.dask import w_inf as dask_w_inf

        with LocalCluster(n_workers=args.dask, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            sens = dask_w_inf(fw, client, progress=True)
    else:
        sens = fw.w_inf(progress=True)
    print(f"Delta_G = {sens.value} (witness {sens.witness}) in {time.perf_counter() - t0:.1f} s")

    # the Wasserstein mechanism (Song, Wang, Chaudhuri 2017): Laplace noise of scale Delta_G / eps
    # gives eps-Pufferfish privacy for every secret X_t = a against every prior in Theta
    # (puffer.mechanisms.Wasserstein(fw, eps) computes the same Delta_G itself)
    eps = 1.0
    # published as lattice noise (puffer.secure: the value snapped to a power-of-two lattice, exact
    # rounded-Laplace noise from OS entropy; the guarantee holds on the lattice at every order)
    noisy = secure_add_noise(np.array([9000.0]), ("laplace", {"b": sens.value / eps}), sensitivity=sens.value,
                             norm="coordinate")
    print(f"home half-hours in the year, with Laplace({sens.value / eps:g}) noise on a lattice: {noisy[0]}")


if __name__ == "__main__":
    main()
