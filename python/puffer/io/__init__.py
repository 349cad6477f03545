"""File-level and cluster noise: keyed releases with a hash-chained ledger (extra ``puffer-privacy[io]``).

The public entry point of publishing files (:func:`noise_file`, ``puffer noise``); the
implementation, shared with :mod:`puffer.spark` and :mod:`puffer.dask`, is :mod:`puffer.publish`.
Every engine takes one :class:`PublishOptions` (or its fields as keywords).

* keys -- ``puffer keygen PATH`` / :func:`keygen`, :func:`load_key`, :func:`as_key` (key file
  path, the key's 32 bytes, or None for fresh OS entropy; weak keys are refused); integer seeds
  are refused (``insecure_seed=`` for tests only, recorded as insecure);
* streams -- :func:`release_stream` (key, nonce, column): fresh noise per release, bitwise
  identical for any batch size, thread count or cluster layout; :func:`unit_positions`;
* the ledger -- :class:`Ledger`, :func:`verify`, :func:`checkpoint`, :func:`read_ledger`,
  :func:`append_ledger` (notes only): append-only, hash-chained, Ed25519-signed
  (:func:`signing_keygen`, ``signing_key=``), checkpointed, locked, fsync'd JSON lines;
* :func:`begin_release` -> :class:`Release` (``.streams(columns)``, ``.pending(digest, rows)``,
  ``.commit()``): the driver-side API the Spark and Dask engines share with :func:`noise_file`;
* :func:`unit_totals`: per-unit total guarantees;
* :func:`noise_file` -- Parquet/CSV -> noisy Parquet (``puffer noise``);
* :func:`clamp_file` -- a published file's noisy columns clamped to a range, recorded as
  post-processing of its release (``puffer clamp``).

Experiments (not publication): :func:`column_stream` (seed, column), as ``rng=`` elsewhere.

The submodules of earlier versions (``puffer.io.keys``, ``.streams``, ``.ledger``, ``.release``,
``.totals``, ``.units``, ``.plan``, ``.arrow``, ``.files``, ``.cli``) are the modules of
:mod:`puffer.publish` under their old names. pyarrow is imported only when a file is read.
"""
import sys as _sys

from ..publish import cli, keys, ledger, plan, release, streams, totals, units
from ..publish.engines import arrow
from ..publish.engines import file as files
from ..publish.engines.file import FORMATS, clamp_file, noise_file
from ..publish.keys import Key, as_key, keygen, load_key
from ..publish.ledger import Ledger, append_ledger, checkpoint, default_ledger_path, read_ledger, verify
from ..publish.options import PublishOptions
from ..publish.plan import NoisePlan, column_stream, resolve
from ..publish.release import Release, begin_release
from ..publish.signing import signing_keygen
from ..publish.streams import new_nonce, release_stream, unit_positions
from ..publish.totals import unit_totals

for _name, _mod in (("keys", keys), ("streams", streams), ("ledger", ledger), ("release", release),
                    ("totals", totals), ("units", units), ("plan", plan), ("arrow", arrow), ("files", files),
                    ("cli", cli)):
    _sys.modules[f"{__name__}.{_name}"] = _mod  # `import puffer.io.ledger` finds the module it always named

__all__ = ["noise_file", "clamp_file", "column_stream", "resolve", "NoisePlan", "read_ledger", "append_ledger", "verify",
           "Ledger", "default_ledger_path", "FORMATS", "Key", "as_key", "keygen", "load_key", "Release",
           "begin_release", "new_nonce", "release_stream", "unit_positions", "unit_totals", "PublishOptions",
           "checkpoint", "signing_keygen"]
