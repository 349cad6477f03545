"""Fast, reproducible noise samplers (issue 5): SIMD (Highway, run-time dispatch) x threads.

Generator
    Philox4x32-10 (Salmon et al., SC 2011), a counter-based generator: value ``i`` of a stream
    depends only on the stream key and ``i``. Output is therefore **bitwise identical for any
    thread count and any chunking** (including the chunks :func:`add_noise` streams in).
    Across SIMD targets the random bits are identical but the transcendental functions differ
    in the last few ulps (FMA vs. no FMA, different vector math), so values agree to a few ulps
    but are **not** bitwise equal across targets.

Streams and ``rng=``
    A :class:`Stream` is a 94-bit stream identity (64-bit Philox key and a 30-bit counter word)
    derived from a :class:`numpy.random.SeedSequence`, plus a position. Every draw uses the
    next ``size`` positions of the stream, so successive draws from one :class:`Stream` never
    reuse randomness. ``rng=`` accepts

    * ``None``: a fresh stream from OS entropy (``SeedSequence()``);
    * an ``int`` or a ``SeedSequence``: a fresh stream from that seed (same seed, same noise);
    * a ``numpy.random.Generator``: 128 bits are drawn from it (``integers(0, 2**32, 4)``) and
      used as the entropy of a ``SeedSequence`` -- the Generator advances, so successive calls
      give different noise, reproducibly for a seeded Generator;
    * a :class:`Stream`: used and advanced;
    * a :class:`KeyedStream` (:func:`draw`, :func:`sample`, :func:`add_noise` only): the keyed
      ChaCha20 generator behind published noise (:func:`puffer.io.release_stream`), used and
      advanced. Philox streams are for experiments; published noise comes from keyed streams.

    ``Stream.spawn(n)`` returns ``n`` independent child streams (``SeedSequence.spawn``) for
    parallel or distributed use (Spark partitions, Dask tasks): give each partition its own
    child, ideally by index (``stream.spawn(n_partitions)[i]``).

Distributions (``kind``: parameters)
    ``uniform``: -- ; ``exponential``: scale; ``laplace``: b; ``gaussian``: sigma;
    ``cauchy``: gamma; ``student_t``: nu, scale; ``gen_gaussian``: beta, scale (density
    ∝ exp(-|x/scale|^beta)); ``logistic``: scale; ``gen_cauchy``: gamma, k (density
    ∝ (1 + (x/gamma)^2)^(-k/2), k > 1; equals gamma * t_{k-1} / sqrt(k-1)).

Far tails (no truncation at a few sigma). Tail transforms use "fine" uniforms
    u = (k + 1/2) 2^-63 from 63 random bits (smallest 2^-64, full relative precision near 0):

    ==============  ==============================  ==========================================
    kind            design                          largest |x| reached (tail mass there)
    ==============  ==============================  ==========================================
    uniform         (k + 1/2) 2^-53, 53 bits        open interval (0, 1)
    exponential     -scale log u                    44.4 scale (2^-64)
    laplace         sign * b (-log u)               44.4 b (2^-64)
    logistic        sign * s (log1p(-v) - log v)    45.1 s (2^-64)
    gaussian        Box-Muller, R = sqrt(-2 log u)  R = 9.42 sigma (P(R > r) = 2^-64)
    cauchy          sign * gamma cot(pi u / 2)      1.2e19 gamma (2^-64)
    student_t       Bailey's polar method           W >= ~2^-105 (tail mass ~2^-105); nu >= 0.05
    gen_cauchy      scaled Student-t                as Student-t (nu = k - 1 >= 0.05)
    gen_gaussian    Gamma(1/beta)^(1/beta), M-T     normal proposal to 9.42 sd (~2^-64)
    ==============  ==============================  ==========================================

Threads and memory
    ``threads=None`` uses all cores (puffer's persistent pool), the GIL is released, results
    are written straight into ``out=``. :func:`add_noise` adds the noise while it is generated
    (no noise buffer), in place with ``out=values``.

Fork (multiprocessing, and Dask or Spark workers started by ``fork``)
    A forked child gets a copy of each stream at its position at the fork, with a new lock: a
    draw in progress in another thread of the parent (which holds the stream's lock while it
    reserves its range) cannot leave the child's copy locked forever. The child's copy then draws
    the **same** values as the parent's next draw, as a forked ``numpy.random.Generator`` does:
    for independent noise per process, give each its own child stream (``stream.spawn(n)[i]``).
    ``rng=None`` reads OS entropy at each call, in a child too.

    Published noise cannot repeat through a fork. A release's noise at position ``p`` is value
    ``p`` of the keyed stream of (key, nonce, column) (:mod:`puffer.publish.streams`), and the
    publishing engines compute ``p`` from the row or the unit id and draw at ``p``, never at a
    stream's own position. So a child that derives a column's
    stream again, or uses one inherited or shipped to it, gets for a row exactly the value any
    other process gets for that row of that release: the one published value, reproducible, not
    a second draw. What makes two releases differ (a release's nonce, secure mode's secret or
    key) is read from the operating system when it is needed (``os.urandom``, ``getrandom``),
    never from a user-space generator state that a fork would copy.

SIMD targets
    :func:`simd_targets` lists the targets this CPU supports (best first); :func:`set_simd_target`
    or the environment variable ``PUFFER_SIMD`` (read at first use) forces one.

Secure mode (``add_noise(..., secure=True)``) is documented in :mod:`puffer.secure`.

Example::

    >>> import numpy as np, puffer
    >>> x = puffer.sampling.draw("laplace", {"b": 2.0}, 5, rng=42)
    >>> bool(np.array_equal(x, puffer.sampling.draw("laplace", {"b": 2.0}, 5, rng=42, threads=1)))
    True
    >>> y = puffer.add_noise(np.zeros(3), ("gaussian", {"sigma": 1.0}), rng=7)
    >>> y.shape
    (3,)
"""
from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from . import _core
from . import _validate as V
from ._streams import _LAYOUT as _LAYOUT  # the streams and their helpers stay importable from here
from ._streams import _LAYOUT_SHIFT as _LAYOUT_SHIFT
from ._streams import _WORD_MASK as _WORD_MASK
from ._streams import KeyedStream as KeyedStream
from ._streams import Stream as Stream
from ._streams import _check_out as _check_out
from ._streams import _threads as _threads
from ._streams import noise_spec as noise_spec
from .errors import ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Stream", "KeyedStream", "draw", "sample", "add_noise", "simd_targets", "simd_target",
           "set_simd_target", "KINDS", "MAX_THREADS"]

#: The largest ``threads=`` a kernel accepts (an error above it). If the system refuses to start
#: threads (address-space or process limits), the work runs on those that started, at worst on
#: the calling thread alone: same result, only slower.
MAX_THREADS = V.MAX_THREADS

_C = _core.sampling

# kind -> (code of the C++ enum sampling::Kind, exported by the binding; parameter names in order)
KINDS: dict[str, tuple[int, tuple[str, ...]]] = {
    "uniform": (int(_C.Kind.uniform), ()),
    "exponential": (int(_C.Kind.exponential), ("scale",)),
    "laplace": (int(_C.Kind.laplace), ("b",)),
    "gaussian": (int(_C.Kind.gaussian), ("sigma",)),
    "cauchy": (int(_C.Kind.cauchy), ("gamma",)),
    "student_t": (int(_C.Kind.student_t), ("nu", "scale")),
    "gen_gaussian": (int(_C.Kind.gen_gaussian), ("beta", "scale")),
    "logistic": (int(_C.Kind.logistic), ("scale",)),
    "gen_cauchy": (int(_C.Kind.gen_cauchy), ("gamma", "k")),
}
_DEFAULT_CHUNK = 1 << 24

# The streams are defined in puffer._streams (below puffer.lattice and puffer.secure, which draw from
# them) and documented, pickled and shown here, where users have always imported them.
Stream.__module__ = KeyedStream.__module__ = __name__


def as_stream(rng: Any, *, keyed: bool = False) -> Any:
    """The :class:`Stream` a ``rng=`` argument stands for (see the module docstring).

    ``keyed=True``: a :class:`KeyedStream` is accepted too (the samplers of this module);
    elsewhere it is refused, since those callers need a Philox stream (spawn, seed sequence)."""
    if isinstance(rng, Stream):
        return rng
    if isinstance(rng, KeyedStream):
        if keyed:
            return rng
        raise ParameterTypeError("rng", rng, "None, an int, a numpy SeedSequence or Generator, or a "
                                 "puffer.sampling.Stream (a KeyedStream is for add_noise/draw/sample only)")
    if isinstance(rng, np.random.Generator):
        return Stream(np.random.SeedSequence([int(v) for v in rng.integers(0, 2**32, size=4, dtype=np.uint32)]))
    return Stream(rng)


def _dtype(dtype: Any) -> np.dtype:
    try:
        dt: np.dtype = np.dtype(dtype)
    except TypeError as exc:
        raise ParameterTypeError("dtype", dtype, "numpy.float64 or numpy.float32") from exc
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ParameterTypeError("dtype", dtype, "numpy.float64 or numpy.float32")
    return dt


def _shape(size: Any) -> tuple[int, ...]:
    if isinstance(size, (numbers.Integral, np.integer)) and not isinstance(size, (bool, np.bool_)):
        # sizes are bounded by what an index can address (numpy: < 2^63 elements)
        return (V.integer("size", size, lo=0, hi=2 ** 62),)
    if isinstance(size, tuple):
        shape = tuple(V.integer("size", s, lo=0, hi=2 ** 62) for s in size)
        if len(shape) > 32:
            raise ParameterError("size", size, "at most 32 dimensions (numpy's limit)")
        return shape
    raise ParameterTypeError("size", size, "an int or a tuple of ints")


def _params(kind: Any, params: Mapping[str, Any] | None) -> tuple[int, float, float]:
    if not isinstance(kind, str):
        raise ParameterTypeError("kind", kind, f"one of {sorted(KINDS)}")
    if kind not in KINDS:
        raise ParameterError("kind", kind, f"one of {sorted(KINDS)}")
    code, names = KINDS[kind]
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise ParameterTypeError("params", params, f"a dict with keys {names}")
    extra = set(params) - set(names)
    if extra:
        raise ParameterError("params", dict(params), f"only the keys {names} for kind '{kind}'")
    vals = []
    for name in names:
        if name not in params:
            raise ParameterError("params", dict(params), f"the key '{name}' for kind '{kind}'")
        if kind == "gen_cauchy" and name == "k":
            vals.append(V.real("k", params[name], lo=1.0, lo_open=True, expected="a number > 1"))
        else:
            vals.append(V.positive(name, params[name]))
    vals += [0.0] * (2 - len(vals))
    return code, vals[0], vals[1]


def _fill(code: int, p0: float, p1: float, stream: Stream | KeyedStream, out: np.ndarray, values: np.ndarray | None,
          threads: int, chunk: int) -> None:
    """Fill/add in chunks of `chunk` values; the stream positions make chunking invisible."""
    flat_out = out.reshape(-1)
    flat_in = None if values is None else values.reshape(-1)
    n = flat_out.size
    if flat_in is not None:  # reject NaN/inf before anything is written (in-place safety)
        bad = _C.first_nonfinite(flat_in, threads)
        if bad >= 0:
            raise ParameterError("values", f"non-finite value {flat_in[bad]} at flat index {bad}", "finite values")
    start = stream._reserve(n)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        vin = None if flat_in is None else flat_in[lo:hi]
        stream._fill_at(code, p0, p1, start + lo, flat_out[lo:hi], vin, threads)


def draw(kind: str, params: Mapping[str, Any] | None = None, size: int | tuple[int, ...] | None = None, *,
         rng: Any = None, dtype: Any = np.float64, out: np.ndarray | None = None,
         threads: int | None = None, chunk: int | None = None) -> np.ndarray | float:
    """Draw ``size`` values of the distribution ``kind`` with parameters ``params``.

    ``size=None`` returns one Python float (or fills ``out`` if given). ``out=`` must be a
    C-contiguous, writable float32/float64 array of shape ``size``; it is filled and returned.
    ``chunk`` (values per call into the core) changes nothing in the output.

    >>> import puffer
    >>> puffer.sampling.draw("gaussian", {"sigma": 1.0}, (2, 3), rng=1).shape
    (2, 3)
    """
    code, p0, p1 = _params(kind, params)
    thr = _threads(threads)
    ch = _DEFAULT_CHUNK if chunk is None else V.integer("chunk", chunk, lo=1)
    stream = as_stream(rng, keyed=True)
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise ParameterTypeError("out", out, "a numpy.ndarray")
        # dtype left at its default follows out; an explicit dtype must match it.
        dt = None if dtype is np.float64 else _dtype(dtype)
        shape = None if size is None else _shape(size)
        out = _check_out(out, dt, shape)
        _fill(code, p0, p1, stream, out, None, thr, ch)
        return out
    dt = _dtype(dtype)
    if size is None:
        one = np.empty(1, dtype=dt)
        _fill(code, p0, p1, stream, one, None, thr, ch)
        return float(one[0])
    res = np.empty(_shape(size), dtype=dt)
    _fill(code, p0, p1, stream, res, None, thr, ch)
    return res


def sample(noise: Any, size: int | tuple[int, ...] | None = None, *, rng: Any = None, dtype: Any = np.float64,
           out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray | float:
    """Draw ``size`` values of a noise family (object with ``_sampler_spec()`` or (kind, params)).

    >>> import puffer
    >>> puffer.sample(("laplace", {"b": 1.0}), 4, rng=0).shape
    (4,)
    """
    kind, params = noise_spec(noise)
    return draw(kind, params, size, rng=rng, dtype=dtype, out=out, threads=threads)


# the result's type follows the values: an array gives a float array (float32 stays float32
# unless secure=True, every other dtype becomes float64; numpy's stubs do not tell float32 from
# float64 arrays apart reliably, hence floating[Any]), a sequence of numbers a float64 array, a
# Python / numpy scalar a numpy float64 (a 0-d array with secure=True), a pandas Series or
# DataFrame (untyped: Any) the same pandas type
@overload
def add_noise(values: NDArray[Any], noise: Any, *, rng: Any = None, out: np.ndarray | None = None,
              threads: int | None = None, secure: bool = False, granularity: float | None = None,
              sensitivity: float | None = None, norm: str | None = None, bound: float | None = None,
              chunk: int | None = None) -> NDArray[np.floating[Any]]: ...
@overload
def add_noise(values: Sequence[float], noise: Any, *, rng: Any = None,
              out: np.ndarray | None = None, threads: int | None = None, secure: bool = False,
              granularity: float | None = None, sensitivity: float | None = None, norm: str | None = None,
              bound: float | None = None, chunk: int | None = None) -> NDArray[np.float64]: ...
@overload
def add_noise(values: float, noise: Any, *, rng: Any = None, out: np.ndarray | None = None,
              threads: int | None = None, secure: bool = False, granularity: float | None = None,
              sensitivity: float | None = None, norm: str | None = None, bound: float | None = None,
              chunk: int | None = None) -> np.float64 | NDArray[np.float64]: ...
@overload
def add_noise(values: Any, noise: Any, *, rng: Any = None, out: np.ndarray | None = None,
              threads: int | None = None, secure: bool = False, granularity: float | None = None,
              sensitivity: float | None = None, norm: str | None = None, bound: float | None = None,
              chunk: int | None = None) -> Any: ...
def add_noise(values: Any, noise: Any, *, rng: Any = None, out: np.ndarray | None = None,
              threads: int | None = None, secure: bool = False, granularity: float | None = None,
              sensitivity: float | None = None, norm: str | None = None, bound: float | None = None,
              chunk: int | None = None) -> Any:
    """``values + noise`` with i.i.d. noise from ``noise``; the noise never needs its own buffer.

    ``rng`` follows numpy's convention (the same seed gives the same draw): for experiments and
    tests, **not for publication** -- a small seed is found by trying seeds, and then the noise
    and the true values follow. Publish with ``secure=True`` or :func:`puffer.io.noise_file`
    with a key made by ``puffer keygen``.

    * ``out=None``: a new array (float32 input stays float32, everything else becomes float64;
      a pandas Series or DataFrame comes back as one, with its index and name / columns);
      bool values and integers float64 cannot hold exactly (|v| > 2^53) are refused;
      ``out=values`` adds in place; any other ``out`` must be a C-contiguous writable array of
      the same shape and dtype. Values must be finite.
    * The noise added to element ``i`` (C order) is value ``i`` of the stream, so the result is
      identical for every ``threads`` and ``chunk`` (values per call into the core, default 2^24).
    * ``secure=True``: exact lattice noise from a CSPRNG (see :func:`puffer.secure.secure_add_noise`
      for ``granularity``, ``sensitivity``, ``norm`` and the input ``bound``); ``rng`` must then be None.

    >>> import numpy as np, puffer
    >>> v = np.arange(4.0)
    >>> w = puffer.add_noise(v, ("laplace", {"b": 0.5}), rng=3, out=v)
    >>> w is v
    True
    """
    if secure:
        from .secure import secure_add_noise
        if rng is not None:
            raise ParameterError("rng", rng, "None in secure mode (keys come from OS entropy only)")
        return secure_add_noise(values, noise, granularity=granularity, sensitivity=sensitivity, norm=norm,
                                bound=bound, out=out, threads=threads)
    for name, v in (("granularity", granularity), ("sensitivity", sensitivity), ("norm", norm), ("bound", bound)):
        if v is not None:
            raise ParameterError(name, v, "None unless secure=True")
    kind, params = noise_spec(noise)
    code, p0, p1 = _params(kind, params)
    thr = _threads(threads)
    ch = _DEFAULT_CHUNK if chunk is None else V.integer("chunk", chunk, lo=1)
    stream = as_stream(rng, keyed=True)
    # bool and inexact integers refused; a pandas Series / DataFrame comes back as one
    src, wrap = V.release_values("values", values)
    if out is None:
        res = np.array(src, dtype=src.dtype, order="C", copy=True)
        _fill(code, p0, p1, stream, res, res, thr, ch)
        return res[()] if res.ndim == 0 else wrap(res)  # a scalar in, a numpy scalar out (as numpy)
    out = _check_out(out, src.dtype, src.shape)
    if out is src or not src.flags.c_contiguous or np.may_share_memory(out, src):
        if out is not src:
            np.copyto(out, src)
        _fill(code, p0, p1, stream, out, out, thr, ch)
    else:
        _fill(code, p0, p1, stream, out, src, thr, ch)
    return out


def simd_targets() -> list[str]:
    """SIMD targets compiled in and supported by this CPU, best first (e.g. AVX3 = AVX-512)."""
    return list(_C.simd_targets())


def simd_target() -> str:
    """The SIMD target the samplers use now."""
    return _C.simd_target()


def set_simd_target(name: str) -> None:
    """Force a SIMD target by name (see :func:`simd_targets`); ``"auto"`` restores the best one.
    Process-wide; the env var ``PUFFER_SIMD`` sets the initial choice."""
    if not isinstance(name, str):
        raise ParameterTypeError("name", name, "a target name such as 'AVX2' or 'auto'")
    _C.set_simd_target(name)

