"""Plumbing from ``rng=`` to the compiled samplers of :mod:`puffer.partial` (one Philox stream per
call, layout tag ``Layout.partial_value`` in the counter word: the per-value sub-stream layout of ``cpp/sampling/partial.hpp``)."""
from __future__ import annotations

from typing import Any

from .. import _core
from .. import _validate as V
from ..sampling import _LAYOUT_SHIFT, _WORD_MASK, Stream, as_stream

_C = _core.partial
_TAG = int(_core.sampling.Layout.partial_value) << _LAYOUT_SHIFT


def take(rng: Any, n: int) -> tuple[int, int, int, int]:
    """(k0, k1, word, start) for ``n`` values of the stream ``rng`` stands for."""
    st: Stream = as_stream(rng)
    k0, k1, word, start = st._take(0, int(n))
    return k0, k1, (word & _WORD_MASK) | _TAG, start


def threads(t: Any) -> int:
    return 0 if t is None else V.threads(t, lo=1)
