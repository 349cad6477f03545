"""The engines that publish through puffer.publish: files, Arrow batches, Spark, Dask.

The engines that publish through :mod:`puffer.publish`: each reads its data, adds the
release's :class:`~puffer.publish.noise.ColumnNoise` and writes, around one preamble
(:func:`puffer.publish.preamble.prepare`) and one release (:func:`puffer.publish.begin_release`).

* :mod:`file <puffer.publish.engines.file>` -- Parquet/CSV -> noisy Parquet (:func:`puffer.io.noise_file`,
  ``puffer noise``);
* :mod:`spark <puffer.publish.engines.spark>` -- Spark DataFrames (:func:`puffer.spark.add_noise`);
* :mod:`dask <puffer.publish.engines.dask>` -- Dask arrays and DataFrames (:func:`puffer.dask.add_noise`);
* :mod:`arrow <puffer.publish.engines.arrow>` -- noise on Arrow record batches (file and Spark);
* :mod:`w_inf <puffer.publish.engines.w_inf>` -- Markov Delta_G on Spark/Dask workers
  (:func:`puffer.spark.w_inf`, :func:`puffer.dask.w_inf`).

Each needs its optional extra (``puffer-privacy[io]``, ``[spark]``, ``[dask]``); nothing here is
imported by ``import puffer.publish``.
"""
