"""The noise of one release, addressed by position: the one place where published noise is drawn.

Every engine (file, Spark, Dask) adds noise through :meth:`ColumnNoise.add` ``(values, column,
rows)``; ``rows`` is the first position of a run of consecutive positions or an array of
positions (row positions, or privacy-unit positions: :func:`puffer.publish.streams.unit_positions`).
The noise of a value is a pure function of the release and the value's *position*, never of the
task or batch that happens to draw it, so a cluster may recompute a task whenever it likes
(retries, a second action, an evicted cache). Where the noise comes from:

* keyed (the default): value ``p`` of the column's release stream ``release_stream(key, nonce,
  column)`` (:mod:`puffer.publish.streams`) through the floating-point samplers
  (:func:`puffer.publish.plan.add_rows`);
* secure, file engine: lattice + exact discrete noise from the core's CSPRNG keyed by OS
  entropy (:mod:`puffer.secure`), drawn in row order;
* secure, Spark/Dask (:class:`SecureNoise`): exact discrete Laplace / Gaussian integers from the
  core's ChaCha20 samplers (Canonne, Kamath & Steinke 2020, Alg. 1-3, :mod:`puffer.secure`),
  keyed per block of :data:`BLOCK` positions by ``HMAC-SHA256(secret, column || block)`` (RFC
  2104, HMAC as a pseudorandom function), where ``secret`` is 256 bits of OS entropy drawn once
  per release on the driver and never stored. The sample of position ``p`` is sample ``p mod
  BLOCK`` of block ``p div BLOCK``'s stream (the rejection samplers consume a variable number of
  words, so a block is always drawn from its start). So every action, retry and partitioning of
  one release gets the same lattice noise, and averaging two actions gains nothing; two
  releases draw independent secrets. The output ``(round_half_even(x/g) + Z) g`` is computed
  with the same exact arithmetic as :func:`puffer.secure.secure_add_noise`.

After the noise, the release's post-processing steps (:class:`PostStep`, recorded in the ledger
entry's ``post_processing``) are applied in order; post-processing of a released value costs no
privacy.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import ParameterError
from .plan import NoisePlan, add_rows

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["BLOCK", "SecureNoise", "ColumnNoise", "PostStep"]

BLOCK = 64  # positions per keyed ChaCha20 stream of secure noise
_DOMAIN = b"puffer/v1/secure-block\x00"


class PostStep(Protocol):
    """A post-processing step of a release: applied to the noisy values of each column, recorded
    in the ledger entry as ``describe()``. Must be a function of the noisy values alone (then it
    costs no privacy) and picklable (it travels to Spark/Dask workers)."""

    def describe(self) -> dict[str, Any]: ...

    def __call__(self, values: NDArray[Any], column: str) -> NDArray[Any]: ...


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
        from .. import _core

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


class ColumnNoise:
    """The noise of one release (see the module docstring): ``streams`` (column -> keyed stream)
    for keyed noise; ``secure`` a :class:`SecureNoise` (Spark/Dask) or ``"os"`` (the file
    engine's row-order lattice noise); ``post``: the post-processing steps. Picklable."""

    def __init__(self, plan: NoisePlan, *, streams: dict[str, Any] | None = None,
                 secure: SecureNoise | str | None = None, granularity: float | None = None,
                 threads: int | None = None, post: tuple[PostStep, ...] = ()) -> None:
        if secure is not None and not isinstance(secure, SecureNoise) and secure != "os":
            raise ParameterError("secure", secure, "None, 'os' or a SecureNoise")
        self.plan, self.streams, self.secure = plan, streams, secure
        self.granularity, self.threads, self.post = granularity, threads, tuple(post)

    def __repr__(self) -> str:
        how = "keyed" if self.secure is None else f"secure ({self.secure!r})"
        return f"ColumnNoise({self.plan.label!r}, {how}, post={[p.describe() for p in self.post]})"

    def add(self, values: NDArray[Any], column: str, rows: Any, valid: NDArray[np.bool_] | None = None
            ) -> NDArray[np.floating[Any]]:
        """``values`` plus the noise of positions ``rows`` (the first position, or int64
        positions), then the post-processing steps. A new array; 0 where ``valid`` is False."""
        out = self._noisy(values, column, rows, valid)
        for step in self.post:
            out = step(out, column)
            if valid is not None:
                out[~valid] = 0.0
        return out

    def _noisy(self, values: NDArray[Any], column: str, rows: Any, valid: NDArray[np.bool_] | None
               ) -> NDArray[np.floating[Any]]:
        plan = self.plan
        if plan.kind is None:  # zero sensitivity: nothing to add
            return add_rows(plan, values, None, rows, valid=valid, threads=self.threads, column=column)
        if self.secure is None:
            if self.streams is None:
                raise AssertionError("a keyed release needs its column streams")
            return add_rows(plan, values, self.streams[column], rows, valid=valid, threads=self.threads,
                            column=column)
        if self.secure == "os":
            return add_rows(plan, values, None, rows, valid=valid, secure_granularity=self.granularity,
                            threads=self.threads, column=column)
        assert isinstance(self.secure, SecureNoise)
        n = np.asarray(values).size
        pos = (np.arange(n, dtype=np.int64) + int(rows)) if isinstance(rows, (int, np.integer)) \
            else np.asarray(rows, dtype=np.int64)
        if n and int(pos.min()) < 0:
            raise ParameterError("row_id", int(pos.min()), "row ids >= 0")
        return self.secure.add(values, column, pos, valid)
