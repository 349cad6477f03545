"""Markov Delta_G on a real distributed.LocalCluster (2 worker processes) and a real Spark
local[2] (that test is in test_prod_spark.py, which holds the run's one Spark session): the
Sensitivity (value, witness, every record) is bitwise equal to the single-process
MarkovChainFramework.w_inf, for prior splits and for position splits of one prior; a worker
killed mid-job yields the same result or a ClusterError (never a partial maximum); cancellation
from the driver stops the workers' kernels. Small chains: each test takes seconds."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from w_inf_cases import FW_ONE, FW_PERIODIC, FW_PRIORS, _same

import puffer.dask as pdask
import puffer.spark as pspark
from puffer.errors import ClusterError, ParameterTypeError
from puffer.models import markov_chain
from puffer.publish.engines.w_inf import _plan
from timing import cpu_seconds


def test_plan_covers_every_cell_once():
    for fw, n in ((FW_PRIORS, 3), (FW_PRIORS, 20), (FW_ONE, 7), (FW_ONE, 500), (FW_PERIODIC, 9)):
        cover = np.zeros((len(fw.priors), fw.length), int)
        for a, b, p0, p1, units in _plan(fw, n):
            cover[a:b, p0:p1] += 1
            assert units == (b - a) * (p1 - p0)
        assert (cover == 1).all()


def test_dask_bitwise_equal_for_prior_and_position_splits(client):
    for fw, tasks in ((FW_PRIORS, None), (FW_PRIORS, 3), (FW_ONE, 6), (FW_PERIODIC, 5)):
        _same(pdask.w_inf(fw, client, tasks=tasks), fw.w_inf())


def test_progress_reaches_the_driver(client):
    seen = []
    pdask.w_inf(FW_ONE, client, tasks=4, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1] == (FW_ONE.length, FW_ONE.length)


def test_bad_engine_is_refused():
    with pytest.raises(ParameterTypeError, match="client"):
        pdask.w_inf(FW_ONE, object())
    with pytest.raises(ParameterTypeError, match="spark"):
        pspark.w_inf(FW_ONE, object())
    with pytest.raises(ParameterTypeError, match="fw"):
        pspark.w_inf("not a framework", object())
    # the message names the value and its type (it said "'NoneType' (type str)", issue 30)
    with pytest.raises(ParameterTypeError, match=r"^parameter 'client' = None \(type NoneType\): expected a "
                                                 r"distributed\.Client$"):
        pdask.w_inf(FW_ONE, None)
    with pytest.raises(ParameterTypeError, match=r"^parameter 'fw' = 42 \(type int\): expected a MarkovChainFramework"):
        pdask.w_inf(42, None)


def test_killed_worker_gives_the_same_result_or_a_clear_error(client):
    fw = markov_chain([[0.9, 0.1], [0.3, 0.7]], T=700)
    expect = fw.w_inf()
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    killed = []

    def kill_once(done, total):
        if not killed and done > 0:
            os.kill(pids[victim], signal.SIGKILL)
            killed.append(victim)

    try:
        got = pdask.w_inf(fw, client, tasks=12, progress=kill_once)
    except ClusterError:
        got = None
    assert killed, "the job ended before a worker could be killed"
    if got is not None:
        _same(got, expect)
    # the nanny restarts the worker: the cluster is usable again
    client.wait_for_workers(2, timeout=600)   # a restart takes seconds; 600 s only detects a hang
    _same(pdask.w_inf(FW_PRIORS, client), FW_PRIORS.w_inf())


def _executing(client):
    return sum(client.run(lambda dask_worker: len(dask_worker.state.executing)).values())


def test_cancellation_reaches_the_workers(client):
    # ~10 CPU s per task: without the cancel event the kernels would run on for seconds. A chain
    # that mixes too slowly for the certified skipping of interior positions (second eigenvalue
    # 0.997: no window up to the memory cap forgets the start; a quickly mixing one, or a
    # persistent one up to ~0.98, finishes in a second or two), so every position is computed directly
    fw = markov_chain([[0.999, 0.001], [0.002, 0.998]], T=9000)
    started = []

    def stop(done, total):
        if _executing(client) == 2 or started:
            started.append(1)
            raise KeyboardInterrupt

    pids = list(client.run(os.getpid).values())
    with pytest.raises(KeyboardInterrupt):
        pdask.w_inf(fw, client, tasks=2, progress=stop)
    assert started
    cpu0 = sum(cpu_seconds(p) for p in pids)
    # a cancelled task that is still running stays in the workers' executing sets until its
    # kernel returns. The kernels poll the cancel event every ~0.5 s: they stop after a fraction
    # of a CPU-second each, where running on would cost the workers ~20 CPU-s (CPU time, not wall
    # time: a loaded machine slows the cancellation down but does not make it cost more CPU)
    while _executing(client):
        time.sleep(0.1)
    spent = sum(cpu_seconds(p) for p in pids) - cpu0
    assert spent < 4.0, f"the workers kept computing after the cancellation ({spent:.1f} CPU-s)"
    _same(pdask.w_inf(FW_PRIORS, client), FW_PRIORS.w_inf())
