"""Post-processing of a noisy release: rounding to the query's lattice, clamping to its range.

Post-processing of a noisy release to the query's range: rounding to the query's lattice, then
clamping to its range. Both are functions of the released value alone (the range and the lattice
come from the framework, which is public, or from the user), so they cost no privacy (the
post-processing property of Pufferfish privacy, Pierquin et al. 2024, Prop 2.1; of every
(eps, delta) guarantee likewise). They are not free in accuracy: the noise has mean zero, so a
noisy value is an unbiased estimate of the true one, but a clamped value is biased toward the
inside of the range (near a bound the noise is cut off on one side only), and so is an average of
clamped values. Estimate means and sums from the unclamped release (unbiased up to the lattice
rounding, for noise with a mean); clamp what is shown value by value (``puffer clamp`` writes a
clamped copy of a published file and keeps the original).

:class:`RangePost` is what :meth:`Mechanism.release <puffer.mechanisms.Mechanism.release>` applies
for ``clamp=`` / ``lattice=`` and what a publishing engine records in the ledger entry's
``post_processing`` (``describe()``) and applies to every column.

>>> import numpy as np, puffer
>>> fw = puffer.models.correlated_pair()                     # the count of two bits: range [0, 2]
>>> p = RangePost.resolve(fw, clamp=True, lattice=True)
>>> p.describe()
{'step': 'range', 'clamp': [0.0, 2.0], 'lattice': {'step': 1.0, 'offset': 0.0}, 'source': 'framework'}
>>> p(np.array([-0.7, 0.4, 1.6, 3.2]))
array([0., 0., 2., 2.])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..refs import Ref

if TYPE_CHECKING:
    pass

__all__ = ["RangePost"]


@dataclass(frozen=True)
class RangePost:
    """Round to ``offset + step Z`` (``step`` None: no rounding), then clamp to ``[lo, hi]`` (None:
    unbounded on that side). ``source``: "framework" or "given"."""

    lo: float | None
    hi: float | None
    step: float | None = None
    offset: float = 0.0
    source: str = "given"

    def describe(self) -> dict[str, Any]:
        """The ledger record of the step."""
        clamp = None if self.lo is None and self.hi is None else [self.lo, self.hi]
        lat = None if self.step is None else {"step": self.step, "offset": self.offset}
        return {"step": "range", "clamp": clamp, "lattice": lat, "source": self.source}

    def __call__(self, values: Any, column: str = "") -> Any:
        """The post-processed values (numpy arrays in place, keeping their dtype; pandas objects
        and scalars as new objects of the same type)."""
        if isinstance(values, np.ndarray):
            x = values
            if self.step is not None:
                np.subtract(x, self.offset, out=x)
                np.divide(x, self.step, out=x)
                np.round(x, out=x)
                np.multiply(x, self.step, out=x)
                np.add(x, self.offset, out=x)
            if self.lo is not None or self.hi is not None:
                np.clip(x, self.lo, self.hi, out=x)
            return x
        y = values
        if self.step is not None:
            y = self.offset + self.step * np.round((y - self.offset) / self.step)
        if self.lo is not None or self.hi is not None:
            y = np.clip(y, self.lo, self.hi)
        return y

    @classmethod
    def resolve(cls, framework: Any, clamp: Any = None, lattice: Any = False) -> RangePost | None:
        """The step for ``clamp`` (None/False: none; True: the framework's
        :meth:`~puffer.Framework.query_range`; ``(lo, hi)``: that range, either end may be None)
        and ``lattice`` (True: round to the framework's :meth:`~puffer.Framework.query_lattice`,
        refused when the query is not integer-valued). None when neither is asked."""
        if not isinstance(lattice, (bool, np.bool_)):
            raise ParameterTypeError("lattice", lattice, "True or False")
        if clamp is None or clamp is False:
            lo = hi = None
            from_fw = False
        elif clamp is True:
            if framework is None:
                raise ParameterError("clamp", True, "a (lo, hi) range: this mechanism has no framework to take "
                                     "the query's range from")
            lo, hi = framework.query_range()
            from_fw = True
        else:
            lo, hi = _range(clamp)
            from_fw = False
        step, offset = None, 0.0
        if lattice:
            if framework is None:
                raise ParameterError("lattice", True, "a mechanism with a framework (the query's lattice comes from it)")
            lat = framework.query_lattice()
            if lat is None:
                raise ParameterError("lattice", True, "an integer-valued query (the framework's query takes "
                                     "non-integer values: there is no lattice to round to)")
            step, offset = lat
        if lo is None and hi is None and step is None:
            return None
        return cls(lo, hi, step, offset, "framework" if (from_fw or clamp is None or clamp is False) else "given")


def _range(clamp: Any) -> tuple[float | None, float | None]:
    if isinstance(clamp, (str, bytes)) or not hasattr(clamp, "__len__") or len(clamp) != 2:
        raise ParameterTypeError("clamp", clamp, "True (the query's range from the framework), a (lo, hi) pair "
                                 "or None")
    out: list[float | None] = []
    for name, v in zip(("lo", "hi"), clamp):
        if v is None:
            out.append(None)
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or math.isnan(float(v)):
            raise ParameterError("clamp", clamp, f"a (lo, hi) range of numbers ({name} = {v!r})")
        out.append(float(v))
    lo, hi = out
    if lo is not None and hi is not None and not lo <= hi:
        raise ParameterError("clamp", clamp, "a range with lo <= hi")
    return lo, hi


# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
REFERENCES = {
    "RangePost": (Ref("pierquin2024", "Prop 2.1"),),
}
