"""Shared fixtures of the production tests."""
import pytest


@pytest.fixture(scope="module")
def client():
    """A distributed.Client on a LocalCluster of 2 single-threaded worker processes (one per test
    module). Its connection and start-up timeouts detect a dead cluster, not a slow one: worker
    processes that import numpy, distributed and puffer start in seconds alone and in minutes on a
    loaded machine."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.comm.timeouts.connect": "900s", "distributed.comm.timeouts.tcp": "900s"}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               memory_limit="2GiB")
        c = Client(cluster)
        yield c
        c.close()
        try:
            cluster.close()
        except KeyError as exc:
            # distributed's own race at close: its worker-status watcher gets a 'remove' for the
            # address of a worker the nanny restarted (test_killed_worker_... kills one) that the
            # cluster's scheduler_info never listed, and _update_worker_status raises KeyError
            # (seen once in CI, load ~4). The cluster is down either way; anything else is raised.
            if not str(exc).startswith("'tcp://"):
                raise
