"""Publishing: keys, release nonces, privacy units, the ledger and its totals.

Publishing: keys, release nonces, privacy units, the ledger and its totals, in one place that
the file, Spark and Dask engines all call.

The public entry points are :mod:`puffer.io` (files: :func:`puffer.io.noise_file`, ``puffer
noise``, and the names below), :func:`puffer.spark.add_noise` and :func:`puffer.dask.add_noise`;
they all take one :class:`PublishOptions` (or its fields as keywords).

Modules, each importing only those above it (no cycles):

* :mod:`options <puffer.publish.options>` -- :class:`PublishOptions`, what a release is;
* :mod:`keys <puffer.publish.keys>` -- release keys (``puffer keygen``), :func:`as_key`;
* :mod:`signing <puffer.publish.signing>` -- Ed25519 signing keys of ledgers (``puffer keygen
  --signing``): :class:`SigningKey`, :class:`PublicKey`;
* :mod:`streams <puffer.publish.streams>` -- :func:`release_stream` (key, nonce, column),
  :func:`unit_positions`;
* :mod:`values <puffer.publish.values>` -- what released values must satisfy (within 2^53, noise
  above their resolution);
* :mod:`units <puffer.publish.units>` -- the privacy unit: records -> one answer per unit;
* :mod:`plan <puffer.publish.plan>` -- :class:`NoisePlan`, :func:`resolve` (mechanism, framework
  file or plain noise);
* :mod:`noise <puffer.publish.noise>` -- :class:`ColumnNoise`, the one place where published
  noise is drawn (and post-processed: :class:`PostStep`);
* :mod:`digest <puffer.publish.digest>` -- content digests of inputs and outputs;
* :mod:`registry <puffer.publish.registry>` -- canonical unit ids and the ledger's registry of
  units (:func:`~puffer.publish.registry.canonical_id`);
* :mod:`ledger <puffer.publish.ledger>` -- :class:`Ledger`, :func:`verify`, :func:`checkpoint`,
  :func:`read_ledger`: hash-chained, signed, checkpointed;
* :mod:`totals <puffer.publish.totals>` -- :func:`unit_totals` and the composition rules;
* :mod:`release <puffer.publish.release>` -- :func:`begin_release` -> :class:`Release`;
* :mod:`preamble <puffer.publish.preamble>` -- :func:`prepare`, the checks every engine makes
  before any work;
* :mod:`engines <puffer.publish.engines>` -- file, Spark, Dask (optional extras);
* :mod:`cli <puffer.publish.cli>` -- ``puffer noise``, ``puffer keygen``, ``puffer ledger``.
"""
from .keys import Key, as_key, keygen, load_key
from .ledger import Ledger, append_ledger, checkpoint, default_ledger_path, read_ledger, verify
from .noise import ColumnNoise, PostStep
from .options import PublishOptions
from .plan import NoisePlan, column_stream, resolve
from .preamble import Prepared, prepare
from .release import Release, begin_release
from .signing import PublicKey, SigningKey, load_public_key, load_signing_key, signing_keygen
from .streams import new_nonce, release_stream, unit_positions
from .totals import unit_totals

__all__ = ["PublishOptions", "Prepared", "prepare", "ColumnNoise", "PostStep", "Key", "as_key", "keygen", "load_key",
           "Ledger", "append_ledger", "checkpoint", "default_ledger_path", "read_ledger", "verify", "SigningKey",
           "PublicKey", "signing_keygen", "load_signing_key", "load_public_key", "NoisePlan", "column_stream",
           "resolve", "Release", "begin_release", "new_nonce", "release_stream", "unit_positions", "unit_totals"]
