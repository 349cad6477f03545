"""File-level and cluster noise: Parquet/CSV ETL with a guarantee ledger (optional extra ``puffer-privacy[io]``).

* :func:`noise_file` — Parquet/CSV -> noisy Parquet in record batches (``puffer noise`` on the
  command line), appending a :mod:`ledger <puffer.io.ledger>` entry;
* :func:`column_stream` — the stream whose value ``r`` is the noise of row ``r`` of a column:
  output is bitwise identical for any batch size, thread count or cluster layout
  (:mod:`puffer.spark`, :mod:`puffer.dask` use the same streams);
* :func:`resolve` — a mechanism object, a framework file or a plain noise -> :class:`NoisePlan`;
* :func:`read_ledger` / :func:`append_ledger`.

pyarrow is imported only when a file is read.
"""
from .files import FORMATS, noise_file
from .ledger import append_ledger, read_ledger
from .plan import NoisePlan, column_stream, resolve, seed_fingerprint

__all__ = ["noise_file", "column_stream", "resolve", "NoisePlan", "read_ledger", "append_ledger",
           "seed_fingerprint", "FORMATS"]
