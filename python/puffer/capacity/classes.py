"""Adversary function classes of capacity bounded privacy: linear, polynomial and unrestricted.

Adversary function classes for capacity bounded privacy (Chaudhuri, Imola,
Machanavajjhala 2019, §3 and §5): ``Lin`` (affine functions of the output, with intercept),
``Poly(k)`` (univariate polynomials of degree <= k with constant term; ``Poly(1) == Lin()``
on the real line) and ``All`` (every measurable function: the unrestricted divergence).

Each class exposes the structural flags the theorems require (cone, convex, translation
invariant, contains constants, closed under negation) and the composition check of the
post-processing theorem (Thm 1): ``contains_composition(I, G)`` is True when i∘g ∈ H for all
i ∈ I, g ∈ G, where G is a class of post-processing maps (``AffineMaps``, ``Polynomials``).

>>> Lin().cone, Poly(3).translation_invariant
(True, True)
>>> Poly(3) >= Lin(), Lin() >= Poly(2)
(True, False)
>>> str(Poly(3)), str(Lin(d=2)), str(All())
('poly_3', 'lin(d=2)', 'all')
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError

__all__ = ["FunctionClass", "Lin", "Poly", "All", "AffineMaps", "PolynomialMaps", "function_class",
           "contains_composition", "direct_sum"]


class FunctionClass:
    """Base class. Flags: ``cone``, ``convex``, ``translation_invariant``,
    ``contains_constants``, ``negation_closed``, ``affine_precomposition_closed``."""

    cone = True
    convex = True
    translation_invariant = True
    contains_constants = True
    negation_closed = True
    affine_precomposition_closed = True
    #: polynomial degree in each coordinate (None if unbounded)
    degree: int | None = None
    #: input dimension (None for any)
    d: int | None = None

    def __ge__(self, other: FunctionClass) -> bool:  # self ⊇ other
        if not isinstance(other, FunctionClass):
            return NotImplemented
        if isinstance(self, All):
            return True
        if isinstance(other, All):
            return False
        if self.d is not None and other.d is not None and self.d != other.d:
            return False
        assert self.degree is not None and other.degree is not None
        if self.degree >= 2 and (self.d or 1) > 1:
            return False  # poly_k is univariate
        return self.degree >= other.degree

    def __le__(self, other: FunctionClass) -> bool:
        if not isinstance(other, FunctionClass):
            return NotImplemented
        return other >= self


@dataclass(frozen=True)
class Lin(FunctionClass):
    """Affine adversaries h(x) = aᵀx + b on R^d (the paper's "lin"; d = None: any dimension)."""

    d: int | None = None

    def __post_init__(self) -> None:
        if self.d is not None:
            object.__setattr__(self, "d", V.integer("d", self.d, lo=1))

    degree = 1

    def __str__(self) -> str:
        return "lin" if self.d is None else f"lin(d={self.d})"


@dataclass(frozen=True)
class Poly(FunctionClass):
    """Univariate polynomials of degree <= k with constant term (``Poly(1)`` is lin on R)."""

    k: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int):
            raise ParameterTypeError("k", self.k, "an integer degree >= 1")
        if self.k < 1:
            raise ParameterError("k", self.k, "a degree >= 1")

    @property
    def degree(self) -> int:  # type: ignore[override]
        return self.k

    d = 1

    def __str__(self) -> str:
        return "lin" if self.k == 1 else f"poly_{self.k}"


@dataclass(frozen=True)
class All(FunctionClass):
    """Every measurable function: the restricted divergence is the ordinary one."""

    def __str__(self) -> str:
        return "all"


# ---- post-processing maps (the class G of Thm 1) ------------------------------------------------
@dataclass(frozen=True)
class AffineMaps:
    """Affine maps y = M x + c (linear maps are the case c = 0)."""

    def __str__(self) -> str:
        return "affine maps"


@dataclass(frozen=True)
class PolynomialMaps:
    """Univariate polynomial maps of degree <= k."""

    k: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", V.integer("k", self.k, lo=1))

    def __str__(self) -> str:
        return f"degree-{self.k} polynomial maps"


def contains_composition(H: FunctionClass, I: FunctionClass, G: object) -> bool:  # noqa: E741 (paper notation)
    """True if i∘g ∈ H for every i ∈ I and g ∈ G (the hypothesis of Thm 1).

    >>> contains_composition(Lin(), Lin(), AffineMaps())
    True
    >>> contains_composition(Lin(), Lin(), PolynomialMaps(2))
    False
    >>> contains_composition(Poly(4), Poly(2), PolynomialMaps(2))
    True
    """
    for name, x in (("H", H), ("I", I)):
        if not isinstance(x, FunctionClass):
            raise ParameterTypeError(name, x, "a FunctionClass (Lin(), Poly(k), All())")
    if isinstance(H, All):
        return True
    if isinstance(I, All):
        return False
    if isinstance(G, AffineMaps):
        deg = I.degree
    elif isinstance(G, PolynomialMaps):
        deg = (I.degree or 0) * G.k
        if G.k > 1 and ((H.d or 1) > 1 or (I.d or 1) > 1):
            return False
    else:
        raise ParameterTypeError("G", G, "AffineMaps() or PolynomialMaps(k)")
    assert H.degree is not None and deg is not None
    return deg <= H.degree


def direct_sum(H1: FunctionClass, H2: FunctionClass) -> str:
    """Name of the class {h1(y1) + h2(y2)} on the product output space (Thms 3 and 4)."""
    return f"{H1} ⊕ {H2}"


_RE = re.compile(r"^(lin|all|poly_(\d+)|lin\(d=(\d+)\))$")


def function_class(H: object) -> FunctionClass:
    """A FunctionClass from an object or its name (``"lin"``, ``"poly_3"``, ``"lin(d=2)"``, ``"all"``)."""
    if isinstance(H, FunctionClass):
        return H
    if not isinstance(H, str):
        raise ParameterTypeError("H", H, "a FunctionClass or one of 'lin', 'poly_k', 'lin(d=n)', 'all'")
    m = _RE.match(H.strip())
    if not m:
        raise ParameterError("H", H, "one of 'lin', 'poly_k' (k >= 1), 'lin(d=n)', 'all'")
    if m.group(1) == "lin":
        return Lin()
    if m.group(1) == "all":
        return All()
    if m.group(2):
        k = int(m.group(2))
        if k < 1:
            raise ParameterError("H", H, "a degree k >= 1 in 'poly_k'")
        return Lin() if k == 1 else Poly(k)
    return Lin(d=int(m.group(3)))

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "contains_composition": (Ref("chaudhuri2019", "Thm 1"),),
}
