"""Plumbing from ``rng=`` to the compiled samplers of :mod:`puffer.partial` (one Philox stream per
call, tag 3 in the counter word: the per-value sub-stream layout of ``cpp/sampling/partial.hpp``)."""
from __future__ import annotations

from typing import Any

from .. import _core
from .. import _validate as V
from ..sampling import Stream, as_stream

_C = _core.partial
_TAG = 3 << 30
_WORD_MASK = (1 << 30) - 1


def take(rng: Any, n: int) -> tuple[int, int, int, int]:
    """(k0, k1, word, start) for ``n`` values of the stream ``rng`` stands for."""
    st: Stream = as_stream(rng)
    k0, k1, word, start = st._take(0, int(n))
    return k0, k1, (word & _WORD_MASK) | _TAG, start


def threads(t: Any) -> int:
    return 0 if t is None else V.threads(t, lo=1)
