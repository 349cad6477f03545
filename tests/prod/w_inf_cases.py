"""Markov chains shared by the cluster Delta_G tests (test_prod_cluster_w_inf.py for Dask,
test_prod_spark.py for Spark, which holds the run's one Spark session)."""
from __future__ import annotations

import numpy as np

from puffer.models import markov_chain


def _chains(n, k, seed):
    rng = np.random.default_rng(seed)
    M = rng.dirichlet(np.ones(k) * 0.7, size=(n, k))
    M[0, 0] = [1.0 - 1e-200 * (k - 1)] + [1e-200] * (k - 1)   # an extreme prior (tiny masses)
    return M


def _same(a, b):
    assert a.value == b.value and a.witness == b.witness
    assert len(a.records) == len(b.records)
    for r, s in zip(a.records, b.records):
        assert r.theta == s.theta and r.pair == s.pair and r.value == s.value


FW_PRIORS = markov_chain(_chains(7, 3, 1), T=25, values=[0, 1, 3])
FW_ONE = markov_chain([[0.95, 0.05], [0.1, 0.9]], T=120)
# a periodic chain (issue 33): two priors, one period of 6 matrices each
FW_PERIODIC = markov_chain(_chains(12, 2, 3).reshape(2, 6, 2, 2), T=50, period=6)
