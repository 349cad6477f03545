"""Lattice noise from a keyed ChaCha20 stream (:class:`puffer.sampling.KeyedStream`).

Value ``p`` of a stream is an exact draw of the plan's integer law (:mod:`.laws`) computed from
the stream's lattice blocks at position ``p`` alone (layout in ``cpp/sampling/keyed_stream.hpp``,
sampler in ``cpp/sampling/lattice.hpp``): the same key, word and position give the same integer
on every machine, thread count, batch size or cluster layout, with no floating point on the
random quantity. The published value ``(round_half_even(x / g) + Z) g`` is a deterministic
function of the lattice point and ``Z`` (post-processing), exact in float64 for ``|x| <= 2^52 g``.

>>> import numpy as np, puffer
>>> from puffer.lattice import add_lattice_noise, lattice_plan
>>> from puffer.sampling import KeyedStream
>>> plan = lattice_plan(("laplace", {"b": 1.0}), sensitivity=1.0, norm="coordinate")
>>> y = add_lattice_noise(np.array([3.0, 4.0]), plan, rng=KeyedStream(bytes(range(32))))
>>> bool(np.all(y / plan.granularity == np.round(y / plan.granularity)))   # on the lattice
True
>>> bool(np.array_equal(y, add_lattice_noise(np.array([3.0, 4.0]), plan, rng=KeyedStream(bytes(range(32))))))
True
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from .laws import LatticeLaw
from .plan import LatticePlan

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._streams import KeyedStream

__all__ = ["add_lattice_noise", "lattice_integers", "check_lattice_values"]


def _keyed(rng: Any) -> KeyedStream:
    from .._streams import KeyedStream

    if not isinstance(rng, KeyedStream):
        raise ParameterTypeError("rng", rng, "a puffer.sampling.KeyedStream (lattice noise is drawn from a keyed "
                                 "ChaCha20 stream: puffer.io.release_stream, or KeyedStream(os.urandom(32)))")
    return rng


def check_lattice_values(values: NDArray[Any], plan: LatticePlan, name: str = "values") -> None:
    """Finite values with ``|x| <= 2^52 g`` (exactly on the lattice once snapped), else an error
    naming ``name``: never clipped or rounded beyond the lattice's exact range."""
    if values.size == 0:
        return
    lim = 2.0 ** (52 + plan.g_exp)
    # the common case in two reductions without temporaries (a NaN propagates through both)
    if float(values.max()) <= lim and -float(values.min()) <= lim:
        return
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ParameterError(name, f"{values.reshape(-1)[i]} at flat index {i}", "finite values")
    big = float(np.abs(values).max())
    if big > lim:
        raise ParameterError(name, big, f"|x| <= 2^52 * granularity = {lim:.4g}, the lattice's exact range "
                             "(values beyond it are refused, not rounded: use a coarser granularity)")


def lattice_integers(law: LatticeLaw, size: int, *, rng: Any, threads: int | None = None) -> NDArray[np.int64]:
    """``size`` integers of ``law`` from the keyed stream ``rng`` (advanced by ``size``)."""
    from .._streams import _threads

    if not isinstance(law, LatticeLaw):
        raise ParameterTypeError("law", law, "a puffer.lattice.LatticeLaw")
    n = V.integer("size", size, lo=0, hi=2**62)
    stream = _keyed(rng)
    start = stream._reserve(n)
    return stream._lattice_int_at(law.code, law.S, start, n, _threads(threads))


def add_lattice_noise(values: Any, plan: LatticePlan, *, rng: Any, out: np.ndarray | None = None,
                      threads: int | None = None) -> Any:
    """``(round_half_even(values / g) + Z) g`` as float64 lattice points, ``Z`` the plan's law drawn
    from the keyed stream ``rng`` at its next ``values.size`` positions (C order; the stream
    advances). ``out`` (float64, C-contiguous, the values' shape) may be the values themselves.
    A pandas Series / DataFrame comes back as one; bool values and integers beyond 2^53 are
    refused (:func:`puffer._validate.release_values`)."""
    from .._streams import _check_out, _threads

    if not isinstance(plan, LatticePlan):
        raise ParameterTypeError("plan", plan, "a puffer.lattice.LatticePlan")
    stream = _keyed(rng)
    src, wrap = V.release_values("values", values)
    x = np.ascontiguousarray(src, dtype=np.float64)
    thr = _threads(threads)
    if out is None:
        res = np.empty(x.shape, dtype=np.float64)
    else:
        res = _check_out(out, np.dtype(np.float64), x.shape)
        wrap = None
    # the kernel checks every value (|x| <= 2^52 g, finite) before it writes any or takes the
    # stream's positions; only when it refuses does the check here run, to name the value and its
    # index (one pass over the values instead of three)
    try:
        stream._lattice_add_next(plan.law.code, plan.law.S, plan.g_exp, x.reshape(-1), res.reshape(-1), thr)
    except ParameterError as e:
        if e.param != "values":
            raise
        check_lattice_values(x, plan)
        raise
    return res if wrap is None else wrap(res)
