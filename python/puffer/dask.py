"""Publishing Dask arrays and DataFrames, and Delta_G on a Dask cluster.

Publishing Dask arrays and DataFrames (optional extra ``puffer-privacy[dask]``): :func:`add_noise`,
and Markov Delta_G on the workers of a ``distributed.Client`` (:func:`w_inf`).

The public entry point; the engine is :mod:`puffer.publish.engines.dask` (its docstring says
how rows and units are addressed), the options those of every engine
(:class:`puffer.publish.PublishOptions`).
"""
from .errors import ClusterError
from .publish.engines.dask import add_noise
from .publish.engines.w_inf import dask_w_inf as w_inf
from .publish.options import PublishOptions

__all__ = ["add_noise", "w_inf", "PublishOptions", "ClusterError"]
