"""Publishing Spark DataFrames, and Delta_G on a Spark cluster.

Publishing Spark DataFrames (optional extra ``puffer-privacy[spark]``): :func:`add_noise`
through ``mapInArrow``, and Markov Delta_G on the workers (:func:`w_inf`).

The public entry point; the engine is :mod:`puffer.publish.engines.spark` (its docstring says
how rows are addressed, frozen and digested), the options those of every engine
(:class:`puffer.publish.PublishOptions`).
"""
from .errors import ClusterError
from .publish.engines.spark import add_noise
from .publish.engines.w_inf import spark_w_inf as w_inf
from .publish.options import PublishOptions

__all__ = ["add_noise", "w_inf", "PublishOptions", "ClusterError"]
