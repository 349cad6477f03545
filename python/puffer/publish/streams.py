"""Release streams: the noise of a published value is a function of (key, nonce, column, position).

For a release with key ``K`` (:mod:`puffer.publish.keys`) and nonce ``N`` (128 random bits, drawn per
release and recorded in the ledger), column ``c`` gets the keyed ChaCha20 stream
(:class:`puffer.sampling.KeyedStream`, RFC 8439 block function in counter mode) whose 256-bit
key is the subkey ``HMAC-SHA256(K, "puffer/v2/stream" || 0x00 || N || 0x00 || c)`` (RFC 2104 with
SHA-256 as a pseudorandom function: subkeys of different nonces or columns are independent for
anyone without ``K``, and nothing about ``K`` follows from a subkey). Value ``p`` of that
stream is the noise at position ``p`` (the exact integer of the release's lattice law,
:mod:`puffer.lattice`; with ``float_noise``, the floating-point transform of the same words):

* without a privacy unit, ``p`` is the row index;
* with a privacy unit, ``p`` is the unit's position (:func:`unit_positions`): the unit id
  itself for non-negative integer ids, a 62-bit SHA-256 of the id plus 2^62 for strings (a
  typed encoding: an integer and a string never share a position). It depends only on the id,
  so any partitioning, ordering, retry or second action recomputes the same noise, and two
  units never share a position (checked per release).

Known values reveal nothing about other units' noise. An adversary who knows the true values
of some units (their own household) learns the raw noise at those positions, i.e. some output
blocks of ChaCha20 under the secret subkey. ChaCha20 is a pseudorandom function of (key,
block index) (Bernstein, "ChaCha, a variant of Salsa20", 2008; RFC 8439): outputs at other
positions stay indistinguishable from uniform given any number of known blocks, and the
256-bit subkey cannot be searched for. So per-unit subkeys are not needed: one keyed stream
per (release, column), indexed by the unit position, already separates units. (The earlier
Philox streams -- 64-bit key, a generator designed for statistics, not secrecy -- remain for
``rng=`` experiments only.)

So output is bitwise identical for any batch size, thread count or cluster layout, and two
releases under one key (January, February) get independent noise because their nonces differ;
a re-run of a recorded release reuses its nonce and reproduces its bytes.

The subkey is secret like ``K``: a :class:`~puffer.sampling.KeyedStream` pickled to a worker
carries it, so ship streams only to trusted workers.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from .keys import Key

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..sampling import KeyedStream

__all__ = ["new_nonce", "release_stream", "unit_positions", "unit_id_kind", "NONCE_BYTES"]

NONCE_BYTES = 16
_DOMAIN = b"puffer/v2/stream\x00"
_HEX = re.compile(r"^[0-9a-f]{32}$")


def new_nonce() -> str:
    """A fresh 128-bit release nonce from OS entropy (hex)."""
    return os.urandom(NONCE_BYTES).hex()


def check_nonce(nonce: Any) -> str:
    """A validated release nonce: 32 lower-case hex digits (128 bits)."""
    if not isinstance(nonce, str) or not _HEX.match(nonce):
        raise ParameterError("nonce", nonce, "32 lower-case hex digits (a 128-bit release nonce)")
    return nonce


def release_stream(key: Key, nonce: str, column: Any) -> KeyedStream:
    """The :class:`puffer.sampling.KeyedStream` of ``column`` in the release (key, nonce), position 0
    (subkey ``HMAC-SHA256(key, "puffer/v2/stream" || 0x00 || nonce || 0x00 || column)``, see the
    module docstring).

    >>> import numpy as np, puffer
    >>> import hashlib
    >>> from puffer.lattice import add_lattice_noise, lattice_plan
    >>> from puffer.publish.keys import as_key
    >>> k, n = as_key(hashlib.sha256(b"doctest key").digest()), new_nonce()
    >>> plan = lattice_plan(("laplace", {"b": 1.0}), sensitivity=None)
    >>> a = add_lattice_noise(np.zeros(4), plan, rng=release_stream(k, n, "x"))
    >>> bool(np.array_equal(a, add_lattice_noise(np.zeros(4), plan, rng=release_stream(k, n, "x"))))
    True
    """
    from ..sampling import KeyedStream

    if not isinstance(key, Key):
        raise ParameterTypeError("key", key, "a puffer.io.Key (see puffer.io.as_key)")
    nb = bytes.fromhex(check_nonce(nonce))
    mac = hmac.new(key.secret, _DOMAIN + nb + b"\x00" + str(column).encode("utf-8"), hashlib.sha256).digest()
    return KeyedStream(mac)


def unit_id_kind(ids: Any) -> str | None:
    """The one type of a batch of unit ids: "int" (integers, whatever their dtype, also Python
    ints in an object array), "str", or None for no ids. Anything else is refused: floats,
    booleans, bytes, dates, nested values (their text forms collide: two 2000-element arrays
    print alike), nulls, and a batch that mixes integers and strings (1 and "1" are two units to
    the data and one to anything that compares them as text)."""
    arr = ids if isinstance(ids, np.ndarray) else np.asarray(ids, dtype=object) if isinstance(ids, (list, tuple)) \
        else np.asarray(ids)
    if arr.size == 0:
        return None
    if arr.dtype.kind in "iu":
        return "int"
    if arr.dtype.kind == "U":
        return "str"
    if arr.dtype.kind != "O":
        raise ParameterTypeError("unit", f"ids of dtype {arr.dtype}", "integer or string unit ids")
    kinds = set()
    for v in arr.ravel().tolist():
        if isinstance(v, str):
            kinds.add("str")
        elif isinstance(v, int) and not isinstance(v, bool):
            kinds.add("int")
        elif v is None:
            raise ParameterError("unit", None, "no null unit ids")
        else:
            raise ParameterTypeError("unit", f"an id of type {type(v).__name__}", "integer or string unit ids")
        if len(kinds) > 1:
            raise ParameterTypeError("unit", "ids of mixed types (integers and strings)", MIXED_IDS)
    return kinds.pop()


MIXED_IDS = ("unit ids of one type, integers or strings: 1 and '1' are two units in the data but one to anything "
          "that compares them as text (pandas/Dask string conversion, Spark, CSV); convert the column first")


def unit_positions(ids: Any) -> NDArray[np.int64]:
    """int64 stream positions of unit ids, by a canonical typed encoding: an integer id is its
    own position (in [0, 2^62)); a string id is the first 62 bits of SHA-256("puffer/v1/unit"
    || UTF-8 id) + 2^62, in [2^62, 2^63). So an integer and a string never share a position,
    whatever array or partition they come in (1 and "1" cannot collide). Ids of any other type,
    or a batch mixing both kinds, are refused (:func:`unit_id_kind`). Duplicate positions (the
    same unit twice, or a 2^-62 hash collision) are an error naming the unit.

    >>> unit_positions(np.array([1, 2])).tolist(), bool(unit_positions(["1"])[0] >= 2**62)
    ([1, 2], True)
    """
    arr = ids if isinstance(ids, np.ndarray) else np.asarray(ids, dtype=object) if isinstance(ids, (list, tuple)) \
        else np.asarray(ids)
    kind = unit_id_kind(arr)
    if kind is None:
        return np.zeros(0, dtype=np.int64)
    if kind == "int":
        if arr.dtype.kind == "O":
            vals = arr.tolist()
            if min(vals) < 0 or max(vals) >= 1 << 62:
                bad = next(v for v in vals if v < 0 or v >= 1 << 62)
                raise ParameterError("unit", int(bad), "integer unit ids in [0, 2^62) (or string ids)")
            a = np.asarray(vals, dtype=np.int64)
        elif arr.dtype.kind == "u" and int(arr.max()) >= 1 << 62:  # before a cast to int64 wraps it
            raise ParameterError("unit", int(arr.max()), "integer unit ids in [0, 2^62) (or string ids)")
        else:
            a = arr.astype(np.int64)
        if a.size and (int(a.min()) < 0 or int(a.max()) >= 1 << 62):
            bad = a[(a < 0) | (a >= 1 << 62)][0]
            raise ParameterError("unit", int(bad), "integer unit ids in [0, 2^62) (or string ids)")
        pos = a
    else:
        out = np.empty(arr.size, dtype=np.int64)
        for i, v in enumerate(arr.ravel().tolist()):
            h = int.from_bytes(hashlib.sha256(b"puffer/v1/unit\x00" + v.encode("utf-8")).digest()[:8], "little")
            out[i] = (h >> 2) | (1 << 62)  # in [2^62, 2^63)
        pos = out
    if pos.size > 1:
        s = np.sort(pos)
        dup = np.flatnonzero(s[1:] == s[:-1])
        if dup.size:
            p = s[dup[0]]
            which = arr.ravel()[np.flatnonzero(pos == p)].tolist()
            raise ParameterError("unit", which[0], f"each unit once (unit ids {which[:3]} share stream position "
                                 f"{int(p)}: the same unit twice, or a hash collision)")
    return pos
