"""File-level and cluster noise: keyed releases with a hash-chained ledger (extra ``puffer-privacy[io]``).

Publishing (every path that publishes: files, :mod:`puffer.spark`, :mod:`puffer.dask`):

* :mod:`keys <puffer.io.keys>` — ``puffer keygen PATH`` / :func:`keygen`, :func:`load_key`,
  :func:`as_key` (key file path, bytes >= 16, or None for fresh OS entropy); integer seeds are
  refused (``insecure_seed=`` for tests only, recorded as insecure);
* :mod:`streams <puffer.io.streams>` — :func:`release_stream` (key, nonce, column): fresh noise
  per release, bitwise identical for any batch size, thread count or cluster layout;
  :func:`unit_positions` (stream positions of privacy-unit ids);
* :mod:`ledger <puffer.io.ledger>` — :class:`Ledger`, :func:`verify`, :func:`read_ledger`,
  :func:`append_ledger`: append-only, hash-chained, locked, fsync'd JSON lines;
* :mod:`release <puffer.io.release>` — :func:`begin_release` -> :class:`Release`
  (``.streams(columns)``, ``.pending(digest, rows)``, ``.commit()``): the driver-side API the
  Spark and Dask writers share with :func:`noise_file`;
* :mod:`totals <puffer.io.totals>` — :func:`unit_totals`: per-unit total guarantees;
* :func:`noise_file` — Parquet/CSV -> noisy Parquet (``puffer noise``).

Experiments (not publication): :func:`column_stream` (seed, column), as ``rng=`` elsewhere.

pyarrow is imported only when a file is read.
"""
from .files import FORMATS, noise_file
from .keys import Key, as_key, keygen, load_key
from .ledger import Ledger, append_ledger, default_ledger_path, read_ledger, verify
from .plan import NoisePlan, column_stream, resolve
from .release import Release, begin_release
from .streams import new_nonce, release_stream, unit_positions
from .totals import unit_totals

__all__ = ["noise_file", "column_stream", "resolve", "NoisePlan", "read_ledger", "append_ledger", "verify",
           "Ledger", "default_ledger_path", "FORMATS", "Key", "as_key", "keygen", "load_key", "Release",
           "begin_release", "new_nonce", "release_stream", "unit_positions", "unit_totals"]
