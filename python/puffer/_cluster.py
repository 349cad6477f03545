"""What :mod:`puffer.spark` and :mod:`puffer.dask` share: noise addressed by row position only.

A cluster recomputes a task whenever it likes (retries, a second action, an evicted cache), so
the noise of a value must be a pure function of the release and of the value's *position*,
never of the task that happens to draw it.

* Floating-point noise: value ``p`` of the column's stream (:func:`puffer.io.plan.add_rows`).
* Secure (lattice) noise, :class:`SecureNoise`: exact rounded-Laplace / discrete-Gaussian
  integers from the core's keyed lattice sampler (:mod:`puffer.lattice`, :mod:`puffer.secure`),
  keyed per block of :data:`BLOCK` positions by ``HMAC-SHA256(secret, column || block)``
  (RFC 2104, HMAC as a pseudorandom function), where ``secret`` is 256 bits of OS entropy drawn
  once per release on the driver and never stored. The sample of position ``p`` is sample
  ``p mod BLOCK`` of block ``p div BLOCK``'s stream (the rejection samplers consume a variable
  number of words, so a block is always drawn from its start). So every action, retry and
  partitioning of one release gets the same lattice noise, and averaging two actions gains
  nothing; two releases draw independent secrets. The output ``(round_half_even(x/g) + Z) g``
  is computed with the same exact arithmetic as :func:`puffer.secure.secure_add_noise`.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ParameterError
from .io.arrow import column_values, output_schema, pyarrow
from .io.plan import NoisePlan, add_rows

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .io.release import Release
    from .io.units import UnitSpec

__all__ = ["BLOCK", "SecureNoise", "RowNoise", "noise_arrow_batch"]

BLOCK = 64  # positions per keyed ChaCha20 stream of secure noise
_DOMAIN = b"puffer/v1/secure-block\x00"


class SecureNoise:
    """Secure lattice noise of one release, addressed by position (see the module docstring).

    Pickled to the workers with its secret (the workers already see the data)."""

    def __init__(self, plan: NoisePlan, granularity: float | None) -> None:
        self.plan = plan.secure_plan(granularity)
        self._secret = os.urandom(32)

    def __repr__(self) -> str:
        return f"SecureNoise(granularity=2**{self.plan.g_exp})"

    def _block_key(self, column: str, block: int) -> bytes:
        msg = _DOMAIN + column.encode("utf-8") + b"\x00" + int(block).to_bytes(8, "little")
        return hmac.new(self._secret, msg, hashlib.sha256).digest()

    def integers(self, column: str, positions: NDArray[np.int64]) -> NDArray[np.int64]:
        """The exact integer noise of ``positions`` (int64 >= 0) in column ``column``."""
        from . import _core

        sp = self.plan
        pos = np.asarray(positions, dtype=np.int64)
        out = np.empty(pos.size, dtype=np.int64)
        if pos.size == 0:
            return out
        blocks, inv = np.unique(pos // BLOCK, return_inverse=True)
        within = pos % BLOCK
        need = np.zeros(blocks.size, dtype=np.int64)
        np.maximum.at(need, inv, within + 1)
        order = np.argsort(inv, kind="stable")
        cuts = np.searchsorted(inv[order], np.arange(blocks.size + 1))
        for j in range(blocks.size):
            z = _core.sampling.lattice_sample(sp.law.code, sp.law.S, self._block_key(column, int(blocks[j])), 0, 0,
                                              int(need[j]), 1)
            idx = order[cuts[j]:cuts[j + 1]]
            out[idx] = z[within[idx]]
        return out

    def add(self, values: NDArray[Any], column: str, positions: NDArray[np.int64], valid: NDArray[np.bool_] | None
            ) -> NDArray[np.float64]:
        """float64 lattice points ``(round_half_even(x/g) + Z) g`` (0 where ``valid`` is False)."""
        sp = self.plan
        x = np.array(values, dtype=np.float64)
        if valid is not None:
            x[~valid] = 0.0
        k = x * 2.0 ** (-sp.g_exp)  # exact: a power-of-two scaling
        bad = np.flatnonzero(~np.isfinite(k) | (np.abs(k) > 2.0**52))
        if bad.size:
            i = int(bad[0])
            raise ParameterError(f"column {column!r}", f"{x[i]} at row {int(positions[i])}",
                                 f"finite values with |x| <= 2^52 * granularity = {2.0 ** (52 + sp.g_exp):.3g} "
                                 "in secure mode")
        z = self.integers(column, positions)
        out: NDArray[np.float64] = np.ldexp((np.rint(k).astype(np.int64) + z).astype(np.float64), sp.g_exp)
        if valid is not None:
            out[~valid] = 0.0
        return out


class RowNoise:
    """The noise of one release: column streams (floating point) or :class:`SecureNoise`."""

    def __init__(self, plan: NoisePlan, streams: dict[str, Any] | None, secure: SecureNoise | None,
                 threads: int | None) -> None:
        self.plan, self.streams, self.secure, self.threads = plan, streams, secure, threads

    def add(self, values: NDArray[Any], column: str, rows: Any, valid: NDArray[np.bool_] | None = None
            ) -> NDArray[np.floating[Any]]:
        """``values`` plus the noise of rows ``rows`` (first row, or int64 positions)."""
        if self.plan.kind is None:  # zero sensitivity: nothing to add
            return add_rows(self.plan, values, None, rows, valid=valid, threads=self.threads, column=column)
        if self.secure is None:
            if self.streams is None:
                raise AssertionError("a floating-point release needs its column streams")
            return add_rows(self.plan, values, self.streams[column], rows, valid=valid, threads=self.threads,
                            column=column)
        n = np.asarray(values).size
        pos = (np.arange(n, dtype=np.int64) + int(rows)) if isinstance(rows, (int, np.integer)) \
            else np.asarray(rows, dtype=np.int64)
        if n and int(pos.min()) < 0:
            raise ParameterError("row_id", int(pos.min()), "row ids >= 0")
        return self.secure.add(values, column, pos, valid)


def noise_arrow_batch(batch: Any, noise: RowNoise, columns: list[str], rows: Any, *, nulls: str,
                      out_schema: Any) -> Any:
    """``batch`` with ``noise`` added to ``columns`` (as :func:`puffer.io.arrow.noise_batch`)."""
    pa = pyarrow()
    arrays = list(batch.columns)
    names = batch.schema.names
    out_schema = output_schema(batch.schema, columns) if out_schema is None else out_schema
    for c in columns:
        i = names.index(c)
        arr = arrays[i]
        t = out_schema.field(c).type
        vals, valid = column_values(arr, c, rows, nulls, t)
        noisy = noise.add(vals, c, rows, valid)
        arrays[i] = pa.array(noisy.astype(t.to_pandas_dtype(), copy=False), type=t,
                             mask=None if valid is None else ~valid)
    return pa.RecordBatch.from_arrays(arrays, schema=out_schema)


# ---- driver side: one release, as the file path makes it (puffer.io.release) -----------------

DIGEST_NOTE = ("sha256 over the per-partition sha256 of each released column (values as little-endian "
               "float64/int64 or UTF-8 text, row order), partitions in order")


def column_bytes(arr: Any) -> bytes:
    """Canonical bytes of one Arrow/numpy/pandas column for the content digests."""
    pa = pyarrow()
    if isinstance(arr, (pa.Array, pa.ChunkedArray)):
        arr = arr.to_numpy(zero_copy_only=False)
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        return np.ascontiguousarray(a, dtype="<f8").tobytes()
    if a.dtype.kind in "iub":
        return np.ascontiguousarray(a, dtype="<i8").tobytes()
    return "\x00".join("\x01" if v is None else str(v) for v in a.tolist()).encode("utf-8") + b"\x00"


class PartDigest:
    """Incremental digest of one partition: one sha256 per column plus the row count."""

    def __init__(self, columns: list[str]) -> None:
        self.columns = list(columns)
        self.h = {c: hashlib.sha256() for c in columns}
        self.rows = 0

    def update(self, get: Any, n: int) -> None:
        for c in self.columns:
            self.h[c].update(column_bytes(get(c)))
        self.rows += int(n)

    def result(self) -> list[int | str]:
        return [self.rows] + [self.h[c].hexdigest() for c in self.columns]


def combine_digests(parts: list[list[Any]]) -> str:
    """'sha256:<hex>' of the per-partition digests in partition order (see :data:`DIGEST_NOTE`)."""
    import json

    h = hashlib.sha256(b"puffer/v1/frame-digest\x00")
    h.update(json.dumps(parts, separators=(",", ":")).encode("ascii"))
    return "sha256:" + h.hexdigest()


class Opened:
    """What :func:`open_release` validated: the plan, the unit declaration, the ledger path."""

    def __init__(self, plan: NoisePlan, spec: UnitSpec, ledger: str, kwargs: dict[str, Any]) -> None:
        self.plan, self.spec, self.ledger, self.kwargs = plan, spec, ledger, kwargs

    def begin(self, input_sha256: str, path_kind: str) -> Release:
        """Open the release (:func:`puffer.io.begin_release`): key, nonce, composition rules."""
        from .io.release import begin_release

        return begin_release(input_sha256=input_sha256, path_kind=path_kind, **self.kwargs)

    def noise(self, rel: Release, columns: list[str], *, secure: bool, granularity: float | None,
              threads: int | None) -> RowNoise:
        """The worker-side noise of release ``rel``: its keyed streams, or per-release secure noise."""
        wplan = self.plan.for_workers(secure=secure, granularity=granularity)
        if secure:
            return RowNoise(wplan, None, SecureNoise(wplan, granularity) if wplan.kind is not None else None, threads)
        return RowNoise(wplan, None if wplan.kind is None else rel.streams(columns), None, threads)


def open_release(mechanism: Any, columns: list[str], *, key: Any, insecure_seed: Any, seed: Any, ledger: Any,
                 unit: Any, order: Any, per_unit: Any, secure: Any, select: Any, nulls: str, granularity: Any,
                 allow_unnoised: Any, allow_uncomposed: Any, budget: Any) -> Opened:
    """Validate a Spark/Dask release exactly as :func:`puffer.io.noise_file` does (before any
    cluster work): seed refused, key, mechanism and columns, zero sensitivity, privacy unit,
    ledger writable and intact. ``ledger`` None: ``puffer-ledger.jsonl`` in the working folder."""
    from .errors import ParameterTypeError
    from .io.files import _framework_description, _jsonable
    from .io.keys import as_key, refuse_seed
    from .io.ledger import Ledger
    from .io.plan import resolve
    from .io.units import unit_spec

    refuse_seed(seed)
    for name, flag in (("secure", secure), ("allow_unnoised", allow_unnoised)):
        if not isinstance(flag, bool):
            raise ParameterTypeError(name, flag, "True or False")
    if ledger is None:
        led_path = os.path.abspath("puffer-ledger.jsonl")
    elif isinstance(ledger, (str, os.PathLike)):
        led_path = os.path.abspath(os.fspath(ledger))
    else:
        raise ParameterTypeError("ledger", ledger, "a ledger file path (None: puffer-ledger.jsonl here); every "
                                 "release is recorded")
    led = Ledger(led_path)
    led.check_writable()
    led.entries()
    plan = resolve(mechanism, select=select)
    plan.check_columns(columns)
    if plan.kind is None and not allow_unnoised:
        raise ParameterError("allow_unnoised", False, f"permission to publish unnoised values: the mechanism "
                             f"({plan.label}) has sensitivity 0, so it adds no noise and the output would be the "
                             "raw data (pass allow_unnoised=True if that is intended)")
    spec = unit_spec(plan, unit, order, per_unit, columns)
    if secure:
        if plan.kind is not None:
            plan.secure_plan(granularity)  # refuse an impossible lattice before any work
    elif granularity is not None:
        raise ParameterError("granularity", granularity, "None unless secure=True")
    if not secure:  # the key now (a bad key file is refused before any cluster work), as the release uses it
        key, insecure_seed = as_key(key, insecure_seed=insecure_seed), None
    config = {"nulls": nulls, "select": select, "granularity": granularity, "allow_unnoised": allow_unnoised}
    kwargs = dict(ledger=led, columns=list(columns), plan=plan, key=key, insecure_seed=insecure_seed,
                  config=config, unit=spec.describe(), framework=_jsonable(_framework_description(mechanism, plan)),
                  allow_uncomposed=allow_uncomposed, budget=budget, secure=secure)
    return Opened(plan, spec, led_path, kwargs)
