"""Where a lattice release puts its values and how much noise it adds.

The lattice ``g Z`` (``g = 2^k``), the padding that snapping costs, and the integer law
(:mod:`.laws`).

**Padding (who pays).** Each input is snapped to the lattice, ``k = round_half_even(x / g)``,
so two inputs whose query values differ by ``Delta`` map to lattice points differing by at most
``Delta' = Delta + c g`` with ``c = n`` (``norm="l1"``), ``c = ceil(sqrt(n))`` (``"l2"``) or
``c = 1`` (``"coordinate"``: each value its own release), ``n`` values. The release is the
post-processing (rounding) of the continuous mechanism applied to the snapped values (rounded
Laplace), or its discrete-Gaussian analogue, with the continuous scale inflated by
``Delta' / Delta``: the mechanism's guarantee, stated for sensitivity ``Delta``, holds unchanged
(:mod:`.laws`). The law's lattice scale is then rounded up to its 64-bit parameter.

``Delta`` here is the quantity the mechanism's theorem scales with: the sensitivity of the
Wasserstein-type mechanisms (W_inf, or the near radius of the approximate one), the Lipschitz
constant of the Markov quilt mechanism, ``eps b`` for the relaxed Kantorovich condition (see
:meth:`puffer.mechanisms.Kantorovich.lattice_sensitivity`)
(:meth:`puffer.mechanisms.Mechanism.lattice_sensitivity`).

**Default granularity**: the largest power of two with ``c g <= Delta / 1024`` (noise inflated by
at most 0.1 %), coarsened so that every input within the declared ``bound`` is exactly on the
lattice (``bound / g <= 2^52``) and so that the core's tables hold the law (lattice scales up to
2^32 for the Laplace, 2^16 for the Gaussian: beyond, the padding is larger). A plain noise (no
sensitivity, nothing calibrated) gets the largest power of two at most ``scale / 1024``. The
lattice depends on declared quantities only (noise, Delta, norm, n, bound), never on the data.

>>> from puffer.lattice import lattice_plan
>>> p = lattice_plan(("laplace", {"b": 1.0}), 1, sensitivity=1.0, norm="coordinate")
>>> p.granularity, p.inflation <= 1 + 1 / 1024, p.law.family
(0.0009765625, True, 'laplace')
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .. import _validate as V
from ..errors import ParameterError
from .laws import MAX_BETA, MAX_SIGMA, LatticeLaw

__all__ = ["LatticePlan", "lattice_plan", "NORMS"]

NORMS = ("l1", "l2", "coordinate")
_G_RANGE = (-1000, 960)


def _float(x: Fraction) -> float:
    """x as a float for a message: inf beyond the double range (float() raises OverflowError)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _padding_count(norm: str, n: int) -> int:
    """c of the padding c g: n (l1), ceil(sqrt(n)) (l2), 1 (coordinate)."""
    return max(n, 1) if norm == "l1" else (math.isqrt(max(n, 1) - 1) + 1 if norm == "l2" else 1)


def granularity_exp(g: Any) -> int:
    """k for a granularity 2^k; an error naming ``granularity`` for anything else."""
    g = V.positive("granularity", g)
    m, e = math.frexp(g)
    if m != 0.5:
        raise ParameterError("granularity", g, "a power of two, e.g. 2**-20")
    return e - 1


@dataclass(frozen=True)
class LatticePlan:
    """What a lattice release does (see the module docstring): the integer ``law``, the lattice
    step ``granularity = 2^g_exp``, the padding sensitivity ``sensitivity`` (None: a plain noise,
    no padding), ``norm`` and ``n`` values, ``padded_sensitivity`` = Delta + c g and
    ``inflation`` = Delta' / Delta (the factor the noise scale grows by), ``scale``: the
    continuous scale asked (b or sigma, input units)."""

    law: LatticeLaw
    granularity: float
    g_exp: int
    sensitivity: float | None
    norm: str
    n: int
    padded_sensitivity: Fraction | None
    inflation: float
    scale: float

    @property
    def family(self) -> str:
        return self.law.family

    @property
    def lattice_scale(self) -> float:
        """The noise scale of the law in input units (beta g for the Laplace, sigma g for the Gaussian)."""
        return self.law.scale * self.granularity

    def describe(self) -> dict[str, Any]:
        """JSON-able record of the lattice (the ledger's ``lattice`` field); :meth:`from_description`
        rebuilds the plan from it, so an auditor can redraw the noise from the key."""
        return {"granularity": self.granularity, "g_exp": self.g_exp, **self.law.describe(),
                "scale_input_units": self.lattice_scale, "asked_scale": self.scale, "norm": self.norm, "n": self.n,
                "padding": None if self.padded_sensitivity is None else
                {"sensitivity": self.sensitivity, "padded": _float(self.padded_sensitivity),
                 "inflation": self.inflation}}

    @classmethod
    def from_description(cls, d: Any) -> LatticePlan:
        """The plan a :meth:`describe` record stands for (the law, the lattice and the padding,
        recomputed exactly from the recorded sensitivity, norm and n)."""
        from ..errors import ParameterTypeError

        if not isinstance(d, dict):
            raise ParameterTypeError("description", d, "a LatticePlan.describe() record (a dict)")
        try:
            law = LatticeLaw(d["family"], int(d["S"], 16))
            g_exp = int(d["g_exp"])
            norm, n, pad, scale = d["norm"], int(d["n"]), d["padding"], float(d["asked_scale"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError("description", str(d)[:80], f"a LatticePlan.describe() record ({exc})") from exc
        if norm not in NORMS:
            raise ParameterError("norm", norm, f"one of {NORMS}")
        gq = Fraction(2) ** g_exp
        if pad is None:
            return cls(law, float(gq), g_exp, None, norm, n, None, 1.0, scale)
        delta = float(pad["sensitivity"])
        padded = Fraction(delta) + _padding_count(norm, n) * gq
        return cls(law, float(gq), g_exp, delta, norm, n, padded, float(padded / Fraction(delta)), scale)

    def __repr__(self) -> str:
        return (f"LatticePlan({self.law.name}, granularity=2**{self.g_exp}, scale={self.law.scale:.6g} lattice units, "
                f"inflation={self.inflation:.6g})")


def lattice_plan(noise: Any, n: int = 1, *, sensitivity: float | None, granularity: float | None = None,
                 norm: str | None = None, bound: float | None = None) -> LatticePlan:
    """The :class:`LatticePlan` of ``n`` values with ``noise`` (Laplace(b) or Gaussian(sigma): an
    object or a ``(kind, params)`` tuple) calibrated for ``sensitivity`` in ``norm`` ('l1' default
    for the Laplace, 'l2' for the Gaussian, or 'coordinate'); ``sensitivity=None`` for a plain
    noise. ``granularity``: a power of two (default: see the module docstring); ``bound``: the
    declared bound on |x|."""
    from .._streams import noise_spec

    kind, params = noise_spec(noise)
    if kind not in ("laplace", "gaussian"):
        raise ParameterError("noise", kind, "Laplace or Gaussian noise on a lattice (no other family has an exact "
                             "lattice law with a certified guarantee here)")
    scale = V.positive("b" if kind == "laplace" else "sigma", params.get("b" if kind == "laplace" else "sigma"))
    norm = ("l1" if kind == "laplace" else "l2") if norm is None else norm
    if norm not in NORMS:
        raise ParameterError("norm", norm, f"one of {NORMS}")
    n = V.integer("n", n, lo=0)
    delta = None if sensitivity is None else V.positive("sensitivity", sensitivity)
    b_fix = None if bound is None else V.positive("bound", bound)
    c = _padding_count(norm, n)
    limit = MAX_BETA if kind == "laplace" else MAX_SIGMA
    if granularity is None:
        # largest power of two with c g <= delta / 1024 (from the exact value: delta / 1024
        # underflows to 0 for subnormal delta); a plain noise: g <= scale / 1024
        target = Fraction(delta) / (1024 * c) if delta is not None else Fraction(scale) / 1024
        g_exp = target.numerator.bit_length() - target.denominator.bit_length()
        while Fraction(2) ** g_exp > target:
            g_exp -= 1
        if b_fix is not None:  # |x/g| <= 2^52 for every declared input: exact float output
            g_exp = max(g_exp, math.frexp(b_fix)[1] - 52)
        # the finest lattice a float64 holds: a smaller scale gets (almost) no noise on it, which
        # the resolution checks of the publishing path refuse unless unnoised values are allowed
        g_exp = min(max(g_exp, _G_RANGE[0]), _G_RANGE[1])
        fixed = False
    else:
        g_exp = granularity_exp(granularity)
        fixed = True
    if not _G_RANGE[0] <= g_exp <= _G_RANGE[1]:
        raise ParameterError("granularity", 2.0**g_exp if g_exp > -1075 else 0.0, "2^k with -1000 <= k <= 960")
    coarsened = False
    while True:
        gq = Fraction(2) ** g_exp  # the lattice step, exact
        if delta is None:
            padded, ratio = None, Fraction(1)
        else:
            padded = Fraction(delta) + c * gq
            ratio = padded / Fraction(delta)
            if not math.isfinite(_float(ratio)):
                raise ParameterError("granularity", float(gq), f"a lattice step small against the sensitivity "
                                     f"{delta!r} (the padding c g would inflate the noise beyond the double range)")
        lat = Fraction(scale) * ratio / gq  # noise scale in lattice units, exact
        if lat > limit and not fixed and g_exp < _G_RANGE[1]:
            g_exp += 1   # beyond what the tables hold: one step coarser (more padding)
            coarsened = True
            continue
        if coarsened and ratio > Fraction(101, 100):
            raise ParameterError("granularity", None, f"a lattice for a noise of {scale:.4g} against a sensitivity "
                                 f"of {delta:.4g}: the finest lattice the samplers hold (2^{g_exp}) inflates the noise "
                                 f"by {_float(ratio - 1):.2%}; pass granularity= explicitly to accept that")
        law = LatticeLaw.for_scale(kind, lat)
        return LatticePlan(law, float(gq), g_exp, delta, norm, n, padded, float(ratio), scale)
