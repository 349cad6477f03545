"""Delta_G of a Markov chain framework on a cluster (Dask or Spark).

Delta_G of a :class:`~puffer.models.MarkovChainFramework` on a cluster: Dask
(``distributed.Client``) or Spark (``SparkSession`` / ``SparkContext``) workers.

The work is cut into tasks of priors (a block of consecutive priors each) and, when there are
fewer priors than tasks (long chains), of positions (each task runs a prior's passes and the
convolutions and W_inf walks of its share of positions, shares of equal convolution cost). Every
task returns its slice of the W table of :meth:`MarkovChainFramework.w_inf` (W_inf of every
prior, position and state pair, computed by the same core kernel, whose values do not depend on
the threads or the split); the driver assembles the whole table and takes its maximum and
witness exactly as the single process does, so the :class:`~puffer.sensitivities.Sensitivity`
is the same, bit for bit (value, witness, records).

Never a partial maximum: the result is returned only once every task has delivered its slice
and the table has no hole. A task whose worker dies is run again by the engine (Dask reschedules
it on another worker; Spark retries it); when the engine gives up, :class:`ClusterError` is raised.

Progress and cancellation reach the workers: Dask tasks report their done units through a
``distributed.Queue`` and poll a ``distributed.Event`` every ~0.5 s from the core's progress hook
(setting it cancels the C++ kernel on every worker within ~0.5 s); Spark tasks run in a job
group cancelled with ``interruptOnCancel`` (the Python workers are interrupted), and progress
follows the stage's finished tasks. Ctrl-C on the driver cancels in both.

>>> import numpy as np, puffer
>>> fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=40)
>>> [t[:4] for t in _plan(fw, 3)]          # one prior, 3 tasks: positions of equal cost
[(0, 1, 0, 16), (0, 1, 16, 25), (0, 1, 25, 40)]
"""
from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ClusterError, ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ...framework import Sensitivity

__all__ = ["ClusterError", "dask_w_inf", "spark_w_inf"]


def _check_fw(fw: Any) -> None:
    from ...models import MarkovChainFramework

    if not isinstance(fw, MarkovChainFramework):
        raise ParameterTypeError("fw", fw, "a MarkovChainFramework (puffer.models.markov_chain)")
    from ...models import _theta_only

    _theta_only(fw, "a cluster's W_inf over the chains (fw.w_inf() gives the certified box bound)")


def _plan(fw: Any, n_tasks: int) -> list[tuple[int, int, int, int, int]]:
    """Tasks (prior lo, prior hi, position lo, position hi, units): blocks of priors, or for fewer
    priors than tasks, each prior's positions cut into shares of equal convolution cost
    (position i convolves slices of (i + 1) span + 1 and (T - 1 - i) span + 1 entries)."""
    n, T = len(fw.priors), fw.length
    if n >= n_tasks:
        cuts = [round(j * n / n_tasks) for j in range(n_tasks + 1)]
        return [(a, b, 0, T, (b - a) * T) for a, b in zip(cuts, cuts[1:]) if b > a]
    per = min(T, -(-n_tasks // n))
    i = np.arange(T, dtype=np.float64)
    cum = np.concatenate([[0.0], np.cumsum((i + 1) * (T - i) + T)])
    pos = [0] + [int(np.searchsorted(cum, cum[-1] * j / per)) for j in range(1, per)] + [T]
    pos = [min(max(p, 0), T) for p in pos]
    out = []
    for th in range(n):
        for a, b in zip(pos, pos[1:]):
            if b > a:
                out.append((th, th + 1, a, b, b - a))
    return out


def _task_table(M: NDArray[np.float64], pi: NDArray[np.float64], vals: NDArray[np.int64], T: int, p0: int, p1: int,
                threads: int, hook: Any) -> NDArray[np.float64]:
    """W_inf of the priors (M, pi) at positions [p0, p1): shape (n, p1 - p0, pairs), by the core
    kernel; ``hook(done, total)`` is its progress callback (raising in it cancels the kernel)."""
    from ... import _core
    from ...models import _check_memory, _resident_bytes

    k = M.shape[-1]                       # M: (n, k, k), or (n, period, k, k) time-varying
    span = int(vals.max() - vals.min())
    _check_memory("framework", 8.0 * M.shape[0] * T * (k * (k - 1) // 2)
                  + _resident_bytes(_core.models.markov_peak_bytes(k, T, span, M.shape[0], threads,
                                                                   period=M.shape[1] if M.ndim == 4 else 1)))
    positions = None if (p0, p1) == (0, T) else np.arange(p0, p1, dtype=np.int64)
    W, _ = _core.models.markov_w_inf(M, pi, vals, T, threads, 1e-9, False, hook, positions)
    return np.ascontiguousarray(W[:, p0:p1, :])


class _Cancelled(Exception):
    pass


def _distributed() -> Any:
    """The ``distributed`` package (its Event/Queue/Client are unannotated: Any here)."""
    import distributed

    return distributed


def _dask_task(j: int, M: NDArray[np.float64], pi: NDArray[np.float64], vals: NDArray[np.int64], T: int, p0: int,
               p1: int, threads: int, token: str) -> tuple[int, NDArray[np.float64]]:
    d = _distributed()
    ev, q = d.Event(f"{token}-cancel"), d.Queue(f"{token}-progress")
    last = [0.0]

    def hook(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] < 0.5 and done < total:
            return
        last[0] = now
        if ev.is_set():
            raise _Cancelled("cancelled by the driver")
        q.put((j, done / total if total else 1.0))

    return j, _task_table(M, pi, vals, T, p0, p1, threads, hook)


def _assemble(fw: Any, plan: list[tuple[int, int, int, int, int]], parts: dict[int, NDArray[np.float64]]
              ) -> Sensitivity:
    k = len(fw.state_names)
    W = np.full((len(fw.priors), fw.length, k * (k - 1) // 2), np.nan)
    for j, (a, b, p0, p1, _) in enumerate(plan):
        if j not in parts:
            raise ClusterError(f"task {j} (priors {a}..{b - 1}, positions {p0}..{p1 - 1}) delivered nothing; "
                               "no partial maximum is returned")
        W[a:b, p0:p1, :] = parts[j]
    if np.isnan(W).any():
        raise ClusterError("the W table has holes; no partial maximum is returned")
    sens: Sensitivity = fw._sensitivity_from_table(W)
    return sens


def _resolve_tasks(tasks: Any, default: int) -> int:
    if tasks is None:
        return max(1, default)
    if isinstance(tasks, bool) or not isinstance(tasks, (int, np.integer)) or tasks < 1:
        raise ParameterError("tasks", tasks, "None (4 per worker core) or an integer >= 1")
    return int(tasks)


def dask_w_inf(fw: Any, client: Any, *, tasks: int | None = None, threads: int = 1, progress: Any = None
               ) -> Sensitivity:
    """Delta_G of ``fw`` (:meth:`MarkovChainFramework.w_inf`) on the workers of a Dask
    ``distributed.Client``: the same Sensitivity, bit for bit. ``tasks``: how many pieces
    (default 4 per worker thread); ``threads``: core threads per task (1 suits a worker thread
    per core); ``progress`` as in :meth:`~MarkovChainFramework.w_inf` (units: priors x
    positions). A worker that dies has its tasks run again elsewhere; if the cluster gives up,
    :class:`ClusterError` (never a partial maximum). Ctrl-C cancels the workers' kernels.
    """
    from ..._progress import resolve

    d = _distributed()
    _check_fw(fw)
    if not isinstance(client, d.Client):
        raise ParameterTypeError("client", client, "a distributed.Client")
    n_threads = sum(client.nthreads().values()) or 1
    plan = _plan(fw, _resolve_tasks(tasks, 4 * n_threads))
    total = sum(p[4] for p in plan) or 1
    cb = resolve(progress, label=f"Markov Delta_G on Dask (T={fw.length})")
    token = f"puffer-w-inf-{uuid.uuid4().hex}"
    ev, q = d.Event(f"{token}-cancel", client=client), d.Queue(f"{token}-progress", client=client)
    M, pi, vals = fw._M, fw._pi, fw._vals
    futures = [client.submit(_dask_task, j, M[a:b], pi[a:b], vals, fw.length, p0, p1, threads, token,
                             key=f"{token}-{j}", pure=False)
               for j, (a, b, p0, p1, _) in enumerate(plan)]
    frac = [0.0] * len(plan)
    parts: dict[int, NDArray[np.float64]] = {}
    try:
        while len(parts) < len(plan):
            for jf, f in enumerate(futures):
                if f.status == "finished" and jf not in parts:
                    j, tab = f.result()
                    parts[j] = tab
                    frac[j] = 1.0
                elif f.status in ("error", "cancelled", "lost"):
                    try:
                        f.result()
                    except Exception as e:  # noqa: BLE001 - re-raised as the cluster's error
                        raise ClusterError(f"task {f.key} failed on the cluster ({type(e).__name__}: {e}); "
                                           "no partial maximum is returned") from e
                    raise ClusterError(f"task {f.key} was {f.status}; no partial maximum is returned")
            for j, x in q.get(batch=True):
                if j not in parts:
                    frac[j] = max(frac[j], float(x))
            if cb is not None:
                cb(int(sum(fr * p[4] for fr, p in zip(frac, plan))), total)
            if len(parts) < len(plan):
                time.sleep(0.1)
    except BaseException:
        ev.set()
        client.cancel(futures)
        raise
    finally:
        try:
            q.get(batch=True)
        except Exception:  # noqa: BLE001 - best-effort clean-up of the progress queue
            pass
    return _assemble(fw, plan, parts)


def _spark_task(args: tuple[Any, ...]) -> tuple[int, NDArray[np.float64]]:
    j, M, pi, vals, T, p0, p1, threads = args
    return j, _task_table(M, pi, vals, T, p0, p1, threads, None)


def spark_w_inf(fw: Any, spark: Any, *, tasks: int | None = None, threads: int = 1, progress: Any = None
                ) -> Sensitivity:
    """Delta_G of ``fw`` (:meth:`MarkovChainFramework.w_inf`) on Spark (a ``SparkSession`` or a
    ``SparkContext``): the same Sensitivity, bit for bit. ``tasks``: how many pieces (default
    4 per default parallelism); ``threads``: core threads per task; ``progress`` as in
    :meth:`~MarkovChainFramework.w_inf` (it follows finished tasks). Failed tasks are retried
    by Spark; if the job fails, :class:`ClusterError` (never a partial maximum). Ctrl-C cancels
    the job group (interrupting the workers).
    """
    from ..._progress import resolve

    _check_fw(fw)
    sc = getattr(spark, "sparkContext", spark)
    if not hasattr(sc, "parallelize") or not hasattr(sc, "cancelJobGroup"):
        raise ParameterTypeError("spark", spark, "a pyspark SparkSession or SparkContext")
    from .spark import _python_workers

    _python_workers(sc)  # the workers must run an interpreter that has puffer
    plan = _plan(fw, _resolve_tasks(tasks, 4 * int(sc.defaultParallelism)))
    total = sum(p[4] for p in plan) or 1
    cb = resolve(progress, label=f"Markov Delta_G on Spark (T={fw.length})")
    group = f"puffer-w-inf-{uuid.uuid4().hex}"
    M, pi, vals, T = fw._M, fw._pi, fw._vals, fw.length
    args = [(j, M[a:b], pi[a:b], vals, T, p0, p1, threads) for j, (a, b, p0, p1, _) in enumerate(plan)]
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            sc.setJobGroup(group, "puffer Markov Delta_G", interruptOnCancel=True)
            box["out"] = sc.parallelize(args, len(args)).map(_spark_task).collect()
        except BaseException as e:  # noqa: BLE001 - handed to the driver thread
            box["err"] = e

    th = threading.Thread(target=run, name="puffer-spark-w-inf", daemon=True)
    th.start()
    try:
        while th.is_alive():
            th.join(0.2)
            if cb is not None:
                done = 0
                tracker = sc.statusTracker()
                for jid in tracker.getJobIdsForGroup(group):
                    info = tracker.getJobInfo(jid)
                    for sid in (info.stageIds if info is not None else []):
                        st = tracker.getStageInfo(sid)
                        if st is not None:
                            done += st.numCompletedTasks
                cb(int(total * min(done, len(plan)) / len(plan)), total)
    except BaseException:
        sc.cancelJobGroup(group)
        th.join(30)
        raise
    if "err" in box:
        e = box["err"]
        raise ClusterError(f"the Spark job failed ({type(e).__name__}: {str(e)[:500]}); "
                           "no partial maximum is returned") from e
    if cb is not None:
        cb(total, total)
    return _assemble(fw, plan, dict(box["out"]))
