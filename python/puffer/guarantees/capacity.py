"""Capacity bounded privacy guarantees (Chaudhuri, Imola, Machanavajjhala 2019, Def 3).

A mechanism is (H, Gamma)-capacity bounded private with parameter eps if the H-restricted
divergence Gamma^H(A(D), A(D')) <= eps for all neighbours: privacy measured only against
adversaries whose test functions lie in the class H ("lin", "poly_3", "all", ...).

``kind`` says where the number comes from:

* ``"exact"`` — the restricted divergence itself, computed with a certified upper value
  (quadrature error and the optimiser's gap on the safe side);
* ``"sound_upper_bound"`` — a proven closed-form upper bound;
* ``"corrected_paper_bound"`` — the paper's Thm 13 / Cor 2 with its proof slip repaired;
* ``"paper_bound"`` — the printed Thm 13 / Cor 2 / Thm 5 formula, which is **not** an upper
  bound for alpha > 2 at small shifts: ``sound`` is False.

``sound`` records whether ``eps`` is a certified upper bound on the restricted divergence.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ._base import Guarantee, register_guarantee
from .provenance import Provenance, as_provenance

__all__ = ["CapacityBounded", "CAPACITY_KINDS", "CAPACITY_DIVERGENCES"]

CAPACITY_KINDS = ("exact", "sound_upper_bound", "corrected_paper_bound", "paper_bound")
CAPACITY_DIVERGENCES = ("kl", "renyi")


@register_guarantee
@dataclass(frozen=True, repr=False)
class CapacityBounded(Guarantee):
    """(H, Gamma)-capacity bounded privacy with parameter eps (Chaudhuri et al. 2019, Def 3).

    H: the adversary class as a string (``"lin"``, ``"lin(d=3)"``, ``"poly_3"``, ``"all"``);
    divergence: ``"kl"`` or ``"renyi"``; alpha: the Rényi order (None for KL).

    >>> g = CapacityBounded("lin", "renyi", 2.0, 0.4054651081081645, kind="exact", sound=True)
    >>> g
    CapacityBounded(H='lin', divergence='renyi', alpha=2.0, eps=0.4054651081081645, kind='exact', sound=True)
    >>> CapacityBounded.from_dict(g.to_dict()) == g
    True
    """

    H: str
    divergence: str
    alpha: float | None
    eps: float
    kind: str = "exact"
    sound: bool = True
    provenance: Provenance | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.H, str) or not self.H:
            raise ParameterTypeError("H", self.H, "a function-class name such as 'lin' or 'poly_3'")
        if self.divergence not in CAPACITY_DIVERGENCES:
            raise ParameterError("divergence", self.divergence, f"one of {CAPACITY_DIVERGENCES}")
        if self.divergence == "kl":
            if self.alpha is not None:
                raise ParameterError("alpha", self.alpha, "None for a KL guarantee")
        else:
            a = V.alpha("alpha", self.alpha)
            if not a > 1.0:
                raise ParameterError("alpha", self.alpha, "an order > 1 (restricted Rényi is defined for alpha > 1)")
            object.__setattr__(self, "alpha", a)
        object.__setattr__(self, "eps", V.nonneg("eps", self.eps, allow_inf=True))
        if self.kind not in CAPACITY_KINDS:
            raise ParameterError("kind", self.kind, f"one of {CAPACITY_KINDS}")
        if not isinstance(self.sound, bool):
            raise ParameterTypeError("sound", self.sound, "a bool")
        object.__setattr__(self, "provenance", as_provenance(self.provenance))

    @property
    def is_infinite(self) -> bool:
        return math.isinf(self.eps)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "CapacityBounded": (Ref("chaudhuri2019", "Def 3"),),
}
