"""What :mod:`puffer.spark` and :mod:`puffer.dask` share: noise addressed by row position only.

A cluster recomputes a task whenever it likes (retries, a second action, an evicted cache), so
the noise of a value must be a pure function of the release and of the value's *position*,
never of the task that happens to draw it.

* Floating-point noise: value ``p`` of the column's stream (:func:`puffer.io.plan.add_rows`).
* Secure (lattice) noise, :class:`SecureNoise`: exact discrete Laplace / Gaussian integers from
  the core's ChaCha20 samplers (Canonne, Kamath & Steinke 2020, Alg. 1-3, :mod:`puffer.secure`),
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
from typing import Any

import numpy as np

from .errors import ParameterError
from .io.arrow import output_schema, pyarrow
from .io.plan import NoisePlan, add_rows

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

    def integers(self, column: str, positions: np.ndarray) -> np.ndarray:
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
            z = _core.sampling.secure_sample(sp.kind, sp.num, sp.den, sp.t, int(need[j]), 1,
                                             self._block_key(column, int(blocks[j])))
            idx = order[cuts[j]:cuts[j + 1]]
            out[idx] = z[within[idx]]
        return out

    def add(self, values: np.ndarray, column: str, positions: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
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
        out = np.ldexp((np.rint(k).astype(np.int64) + z).astype(np.float64), sp.g_exp)
        if valid is not None:
            out[~valid] = 0.0
        return out


class RowNoise:
    """The noise of one release: column streams (floating point) or :class:`SecureNoise`."""

    def __init__(self, plan: NoisePlan, streams: dict | None, secure: SecureNoise | None,
                 threads: int | None) -> None:
        self.plan, self.streams, self.secure, self.threads = plan, streams, secure, threads

    def add(self, values: np.ndarray, column: str, rows: Any, valid: np.ndarray | None = None) -> np.ndarray:
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
        valid = None
        if arr.null_count:
            if nulls == "error":
                first = int(np.flatnonzero(~np.asarray(arr.is_valid()))[0])
                where = rows + first if isinstance(rows, (int, np.integer)) else int(np.asarray(rows)[first])
                raise ParameterError(f"column {c!r}", f"null at row {where}",
                                     "no nulls (or nulls='keep' to leave null rows null, without noise)")
            valid = np.asarray(arr.is_valid(), dtype=bool)
            arr = arr.fill_null(0)
        t = out_schema.field(c).type
        vals = arr.to_numpy(zero_copy_only=False).astype(t.to_pandas_dtype(), copy=False)
        noisy = noise.add(vals, c, rows, valid)
        arrays[i] = pa.array(noisy.astype(t.to_pandas_dtype(), copy=False), type=t,
                             mask=None if valid is None else ~valid)
    return pa.RecordBatch.from_arrays(arrays, schema=out_schema)
