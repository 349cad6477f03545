"""The random streams behind every sampler, and the argument checks they share: the Philox
:class:`Stream` and the keyed ChaCha20 :class:`KeyedStream` (public as ``puffer.sampling.Stream`` and
``puffer.sampling.KeyedStream``, documented there), ``threads=``, ``out=`` and noise specifications.

Below :mod:`puffer.sampling`, :mod:`puffer.lattice` and :mod:`puffer.secure`, which all draw from
these streams: ``sampling.add_noise(secure=True)`` calls :mod:`puffer.secure`, which draws lattice
noise from a fresh :class:`KeyedStream`, so the streams cannot live in :mod:`puffer.sampling`
without the imports running in a circle. Generators: Philox4x32-10 (Salmon et al., SC 2011) and
ChaCha20 (RFC 8439), in the C++ core (``cpp/sampling``).
"""
from __future__ import annotations

import itertools
import numbers
import os
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _core
from . import _validate as V
from .errors import ParameterError, ParameterTypeError

__all__ = ["Stream", "KeyedStream", "noise_spec"]

_C = _core.sampling

# Counter word layout: the top bits tag the counter layout so draws of different layouts from
# one stream can never share a Philox block (pair / Student-t / gen. Gaussian sub-streams); the
# tags and the shift come from the C++ enum sampling::Layout.
_LAYOUT_SHIFT = int(_C.LAYOUT_SHIFT)
_LAYOUT = {int(k): int(_C.layout_of(k)) for k in _C.Kind.__members__.values()}
_WORD_MASK = (1 << _LAYOUT_SHIFT) - 1


class Stream:
    """A reproducible Philox4x32-10 stream with a position (see the module docstring).

    ``Stream(seed)`` with seed None (OS entropy), an int, a sequence of ints or a
    ``numpy.random.SeedSequence``. ``spawn(n)`` gives independent children; ``position`` is
    the index of the next value drawn (draws of ``size`` values advance it by ``size``).
    """

    __slots__ = ("_ss", "_k0", "_k1", "_word", "_position", "_lock", "__weakref__")

    def __init__(self, seed: Any = None):
        if isinstance(seed, np.random.SeedSequence):
            ss = seed
        elif seed is None or isinstance(seed, (numbers.Integral, np.integer)) and not isinstance(seed, bool):
            if seed is not None and int(seed) < 0:
                raise ParameterError("rng", seed, "a non-negative integer seed")
            ss = np.random.SeedSequence(None if seed is None else int(seed))
        elif isinstance(seed, (list, tuple)) and all(isinstance(s, (numbers.Integral, np.integer)) for s in seed):
            ss = np.random.SeedSequence([int(s) for s in seed])
        else:
            raise ParameterTypeError("rng", seed, "None, an int, a numpy SeedSequence, a numpy Generator "
                                     "or a puffer.sampling.Stream")
        self._ss = ss
        k = ss.generate_state(3, np.uint32)
        self._k0, self._k1, self._word = int(k[0]), int(k[1]), int(k[2]) & _WORD_MASK
        self._position = 0
        self._lock = threading.Lock()  # draws from several Python threads get disjoint ranges
        _LIVE[next(_IDS)] = self        # a forked child gets the lock anew (_after_fork)

    def __getstate__(self) -> tuple[np.random.SeedSequence, int]:
        return (self._ss, self.position)

    def __setstate__(self, state: tuple[np.random.SeedSequence, int]) -> None:
        type(self).__init__(self, state[0])   # __slots__: no instance attribute shadows it
        self.position = state[1]

    @property
    def position(self) -> int:
        """Index of the next value drawn; settable to replay or skip (0 <= position < 2^64)."""
        return self._position

    @position.setter
    def position(self, value: int) -> None:
        self._position = V.integer("position", value, lo=0, hi=2 ** 64 - 1)

    @property
    def seed_sequence(self) -> np.random.SeedSequence:
        return self._ss

    def spawn(self, n: int) -> list[Stream]:
        """``n`` independent child streams (``SeedSequence.spawn``), e.g. one per partition."""
        n = V.integer("n", n, lo=0)
        return [Stream(c) for c in self._ss.spawn(n)]

    def _take(self, kind_code: int, n: int) -> tuple[int, int, int, int]:
        with self._lock:
            start = self._position
            if start + n >= 1 << 64:
                raise ParameterError("size", n, "a draw that keeps the stream position below 2^64")
            self._position = start + n
        return self._k0, self._k1, self._word | (_LAYOUT[kind_code] << _LAYOUT_SHIFT), start

    def _reserve(self, n: int) -> int:
        """The first of the next ``n`` positions (the position advances by ``n``)."""
        return self._take(0, n)[3]

    def _fill_at(self, code: int, p0: float, p1: float, start: int, out: np.ndarray, values: np.ndarray | None,
                 threads: int) -> None:
        """``out = values + X[start : start + out.size]`` (the core kernel; position unchanged)."""
        word = self._word | (_LAYOUT[code] << _LAYOUT_SHIFT)
        fn = _C.fill_f64 if out.dtype == np.float64 else _C.fill_f32
        fn(code, p0, p1, self._k0, self._k1, word, start, out, values, threads)

    def __repr__(self) -> str:
        return f"Stream(entropy={self._ss.entropy!r}, spawn_key={self._ss.spawn_key}, position={self.position})"


class KeyedStream:
    """A keyed ChaCha20 noise stream with a position: the generator behind published noise.

    ``KeyedStream(key, word=0)`` with ``key`` 32 **secret** bytes (a 256-bit ChaCha20 key, RFC
    8439) and ``word`` a public 32-bit domain separator. Value ``i`` of the stream is computed
    from the ChaCha20 blocks of index ``i`` (layout in ``cpp/sampling/keyed_stream.hpp``) with the
    same variate transforms as :class:`Stream`, so it depends only on (key, word, i): bitwise
    identical for any ``threads`` and ``chunk``. Unlike Philox, ChaCha20 is a cryptographic
    generator: whoever knows some values of the stream (the noise of their own rows) learns
    nothing about the other values without the key.

    :func:`puffer.io.release_stream` derives these per (release key, nonce, column). The key
    travels with the object: a pickled ``KeyedStream`` contains it, so ship one only to trusted
    workers (as the release :class:`puffer.io.Key` itself); its repr never shows it. Accepted as
    ``rng=`` by :func:`add_noise`, :func:`draw` and :func:`sample` only (the Philox-only samplers
    refuse it).

    >>> import numpy as np, puffer
    >>> s = puffer.sampling.KeyedStream(bytes(range(32)))
    >>> a = puffer.add_noise(np.zeros(3), ("laplace", {"b": 1.0}), rng=s)
    >>> s.position
    3
    >>> s.position = 0
    >>> bool(np.array_equal(a, puffer.add_noise(np.zeros(3), ("laplace", {"b": 1.0}), rng=s, threads=1)))
    True
    """

    __slots__ = ("_key", "_word", "_position", "_lock", "__weakref__")

    def __init__(self, key: bytes, *, word: int = 0):
        if not isinstance(key, (bytes, bytearray)):
            # the value is not shown: a key given in the wrong type is still a secret
            raise ParameterTypeError("key", f"a {type(key).__name__} (not shown)", "32 secret bytes (a 256-bit ChaCha20 key)")
        if len(key) != 32:
            raise ParameterError("key", f"{len(key)} bytes", "32 secret bytes (a 256-bit ChaCha20 key)")
        self._key = bytes(key)
        self._word = V.integer("word", word, lo=0, hi=2 ** 32 - 1)
        self._position = 0
        self._lock = threading.Lock()
        _LIVE[next(_IDS)] = self

    def __getstate__(self) -> tuple[bytes, int, int]:
        return (self._key, self._word, self._position)

    def __setstate__(self, state: tuple[bytes, int, int]) -> None:
        type(self).__init__(self, state[0], word=state[1])   # __slots__: no instance attribute shadows it
        self.position = state[2]

    @property
    def position(self) -> int:
        """Index of the next value drawn; settable to replay or skip (0 <= position < 2^64)."""
        return self._position

    @position.setter
    def position(self, value: int) -> None:
        self._position = V.integer("position", value, lo=0, hi=2 ** 64 - 1)

    @property
    def word(self) -> int:
        return self._word

    def _reserve(self, n: int) -> int:
        with self._lock:
            start = self._position
            if start + n >= 1 << 64:
                raise ParameterError("size", n, "a draw that keeps the stream position below 2^64")
            self._position = start + n
        return start

    def _fill_at(self, code: int, p0: float, p1: float, start: int, out: np.ndarray, values: np.ndarray | None,
                 threads: int) -> None:
        fn = _C.fill_keyed_f64 if out.dtype == np.float64 else _C.fill_keyed_f32
        fn(code, p0, p1, self._key, self._word, start, out, values, threads)

    def _lattice_add_at(self, code: int, S: int, g_exp: int, start: int, values: np.ndarray, out: np.ndarray,
                        threads: int) -> None:
        """``out = (round_half_even(values / g) + Z[start : start + n]) g`` with ``Z`` the lattice
        noise of law (code, S) (:mod:`puffer.lattice`; position unchanged)."""
        _C.lattice_add(code, S, g_exp, self._key, self._word, start, values, out, threads)

    def _lattice_add_next(self, code: int, S: int, g_exp: int, values: np.ndarray, out: np.ndarray,
                          threads: int) -> None:
        """As :meth:`_lattice_add_at` at the next ``values.size`` positions, which are taken (the
        position advances) only if the kernel accepts every value: it checks them all before it
        writes any, so a refused value leaves neither output nor a consumed stream range."""
        n = values.size
        with self._lock:   # (a draw of another thread waits: the ranges stay disjoint)
            start = self._position
            if start + n >= 1 << 64:
                raise ParameterError("size", n, "a draw that keeps the stream position below 2^64")
            _C.lattice_add(code, S, g_exp, self._key, self._word, start, values, out, threads)
            self._position = start + n

    def _lattice_int_at(self, code: int, S: int, start: int, n: int, threads: int) -> np.ndarray:
        """The lattice noise integers ``Z[start : start + n]`` of law (code, S) (position unchanged)."""
        out: np.ndarray = _C.lattice_sample(code, S, self._key, self._word, start, n, threads)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeyedStream):
            return NotImplemented
        return (self._key, self._word, self._position) == (other._key, other._word, other._position)

    __hash__ = None  # type: ignore[assignment]  # mutable position

    def __repr__(self) -> str:
        return f"KeyedStream(key=<secret>, word={self._word}, position={self._position})"


# Every live stream, so that a forked child can replace their locks: a lock held by another thread
# of the parent at the fork (a draw reserving its range) stays held in the child, where no thread
# will ever release it, and the child's first draw from that stream would wait forever. (Keyed by
# a serial number: a KeyedStream is unhashable, its position being mutable.)
_LIVE: weakref.WeakValueDictionary[int, Stream | KeyedStream] = weakref.WeakValueDictionary()
_IDS = itertools.count()


def _after_fork() -> None:
    for s in list(_LIVE.values()):
        s._lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork)


def _threads(threads: Any) -> int:
    if threads is None:
        return 0
    return V.threads(threads, lo=1)


def noise_spec(noise: Any) -> tuple[str, dict[str, Any]]:
    """(kind, params) of a noise family object (``_sampler_spec()``) or of a (kind, params) tuple."""
    if isinstance(noise, type):  # a family class, not an instance: its scale is unknown
        raise ParameterTypeError("noise", noise, f"an instance with its scale, e.g. {noise.__name__}(1.0)")
    spec = getattr(noise, "_sampler_spec", None)
    if callable(spec):
        noise = spec()
    if (isinstance(noise, tuple) and len(noise) == 2 and isinstance(noise[0], str)
            and (noise[1] is None or isinstance(noise[1], Mapping))):
        return noise[0], dict(noise[1] or {})
    raise ParameterTypeError("noise", noise, "a puffer noise family (with _sampler_spec()) or a "
                             "(kind, params) tuple such as ('laplace', {'b': 1.0})")


def _check_out(out: Any, dtype: np.dtype | None, shape: tuple[int, ...] | None, name: str = "out") -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise ParameterTypeError(name, out, "a numpy.ndarray")
    if out.dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ParameterTypeError(name, f"array of dtype {out.dtype}", "dtype float64 or float32")
    if dtype is not None and out.dtype != dtype:
        raise ParameterTypeError(name, f"array of dtype {out.dtype}", f"dtype {dtype}")
    if shape is not None and out.shape != shape:
        raise ParameterError(name, f"array of shape {out.shape}", f"shape {shape}")
    if not out.flags.c_contiguous:
        raise ParameterError(name, "a non-contiguous array", "a C-contiguous array")
    if not out.flags.writeable:
        raise ParameterError(name, "a read-only array", "a writable array")
    return out
