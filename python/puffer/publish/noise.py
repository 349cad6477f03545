"""The noise of one release, addressed by position: the one place where published noise is drawn.

Every engine (file, Spark, Dask) adds noise through :meth:`ColumnNoise.add` ``(values, column,
rows)``; ``rows`` is the first position of a run of consecutive positions or an array of
positions (row positions, or privacy-unit positions: :func:`puffer.publish.streams.unit_positions`).
The noise of a value is a pure function of the release and the value's *position*, never of the
task or batch that happens to draw it, so a cluster may recompute a task whenever it likes
(retries, a second action, an evicted cache). Value ``p`` of the column's keyed ChaCha20 stream
is the noise at position ``p``:

* lattice noise (the default, :mod:`puffer.lattice`): the values are snapped to the release's
  power-of-two lattice and an exact integer of the lattice plan's law is drawn at position ``p``
  (``cpp/sampling/lattice.hpp``): the output ``(round_half_even(x/g) + Z) g`` is a float64
  lattice point, safe in floating point and the same on every engine for one key and nonce;
* the stream: ``release_stream(key, nonce, column)`` (:mod:`puffer.publish.streams`), or in
  secure mode :func:`secure_streams` -- keyed by ``HMAC-SHA256(secret, column)`` (RFC 2104)
  with ``secret`` 256 bits of OS entropy drawn once per release on the driver and never stored:
  every action, retry and partitioning of one release gets the same noise, two releases
  independent noise, and nothing can be re-run;
* ``float_noise``: the floating-point samplers on the keyed stream (:func:`puffer.publish.plan.add_rows`),
  for noise families without a lattice law (not safe in floating point, recorded).

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
from .values import check_floats

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..lattice import LatticePlan
    from ..sampling import KeyedStream

__all__ = ["ColumnNoise", "PostStep", "secure_streams"]

_SECURE_DOMAIN = b"puffer/v2/secure-stream\x00"


def secure_streams(columns: list[str]) -> dict[str, KeyedStream]:
    """Secure mode's column streams: keyed by ``HMAC-SHA256(secret, domain || column)`` with a
    fresh 256-bit ``secret`` from OS entropy, forgotten when the release's noise object is."""
    from ..sampling import KeyedStream

    secret = os.urandom(32)
    return {c: KeyedStream(hmac.new(secret, _SECURE_DOMAIN + c.encode("utf-8"), hashlib.sha256).digest())
            for c in columns}


class PostStep(Protocol):
    """A post-processing step of a release: applied to the noisy values of each column, recorded
    in the ledger entry as ``describe()``. Must be a function of the noisy values alone (then it
    costs no privacy) and picklable (it travels to Spark/Dask workers)."""

    def describe(self) -> dict[str, Any]: ...

    def __call__(self, values: NDArray[Any], column: str) -> NDArray[Any]: ...


class ColumnNoise:
    """The noise of one release (see the module docstring): ``streams`` (column -> keyed stream),
    ``lattice`` the :class:`~puffer.lattice.LatticePlan` (None: float noise), ``secure``:
    whether the streams come from OS entropy; ``post``: the post-processing steps. Picklable
    (the streams carry their keys: ship it to trusted workers only)."""

    def __init__(self, plan: NoisePlan, *, streams: dict[str, Any] | None = None, lattice: LatticePlan | None = None,
                 secure: bool = False, threads: int | None = None, post: tuple[PostStep, ...] = (),
                 scale: float | None = None, allow_unnoised: bool = False) -> None:
        if plan.kind is not None and streams is None:
            raise ParameterError("streams", None, "the column streams of a release that adds noise")
        self.plan, self.streams, self.lattice, self.secure = plan, streams, lattice, bool(secure)
        self.threads, self.post = threads, tuple(post)
        self.scale, self.allow_unnoised = scale, allow_unnoised

    def __repr__(self) -> str:
        how = ("secure " if self.secure else "keyed ") + ("float noise" if self.lattice is None else repr(self.lattice))
        return f"ColumnNoise({self.plan.label!r}, {how}, post={[p.describe() for p in self.post]})"

    def add(self, values: NDArray[Any], column: str, rows: Any, valid: NDArray[np.bool_] | None = None
            ) -> NDArray[np.floating[Any]]:
        """``values`` plus the noise of positions ``rows`` (the first position, or int64
        positions), then the post-processing steps. A new array (float64 lattice points with
        lattice noise); 0 where ``valid`` is False. The values are checked first
        (:func:`puffer.publish.values.check_floats`: within 2^53 -- 2^24 for float32 values with
        float noise, which stay float32 --, and the noise above their resolution unless
        ``allow_unnoised``)."""
        v = np.asarray(values)
        checked = v.dtype.kind == "f"
        if checked:
            if self.lattice is not None:   # lattice points are float64: the float64 range applies
                v = v.astype(np.float64, copy=False)
            if valid is not None:
                v = np.where(valid, v, 0.0)  # a null row's placeholder is not released
            check_floats(v, column, rows, scale=None if self.plan.kind is None else self.scale,
                         allow_unnoised=self.allow_unnoised)
        plan = self.plan
        stream = None if plan.kind is None or self.streams is None else self.streams[column]
        out = add_rows(plan, values, stream, rows, valid=valid, lattice=self.lattice, threads=self.threads,
                       column=column, checked=checked)
        for step in self.post:
            out = step(out, column)
            if valid is not None:
                out[~valid] = 0.0
        return out
