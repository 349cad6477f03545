"""What every calibrated mechanism shares: the noise, the sensitivity with its witness, the
guarantee with provenance, the group-DP comparison, and ``release``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..framework import Framework, Sensitivity
from ..guarantees import Provenance, round_up
from ..errors import ParameterError, ParameterTypeError


@dataclass(frozen=True)
class GroupComparison:
    """The noise group DP would need for the same target: ``sensitivity`` (Delta_GROUP),
    ``scale`` (the noise parameter), and ``gain`` = group scale / puffer scale (> 1 means
    puffer adds less noise). ``note`` says what the group is."""

    sensitivity: float
    scale: float
    gain: float
    note: str = ""


def noise_description(noise: Any) -> Any:
    if noise is None:
        return None
    spec = getattr(noise, "_sampler_spec", None)
    if callable(spec):
        try:
            kind, params = spec()
            return {"family": kind, **{k: float(v) for k, v in params.items()}}
        except Exception:  # noqa: BLE001 - a Custom family has no sampler spec; fall back to repr
            pass
    return repr(noise)


class Mechanism:
    """Base of the calibrated mechanisms. Subclasses set ``noise``, ``sensitivity``,
    ``guarantee`` and ``group`` in their constructor."""

    theorem = ""
    noise: Any
    sensitivity: Sensitivity
    guarantee: Any
    group: GroupComparison | None
    framework: Framework

    @staticmethod
    def _check_framework(fw: Any) -> Framework:
        if not isinstance(fw, Framework):
            raise ParameterTypeError("framework", fw, "a puffer.Framework")
        return fw

    def _provenance(self, notes: str = "") -> Provenance:
        s = self.sensitivity
        return Provenance(
            mechanism=type(self).__name__, theorem=self.theorem, sensitivity=s.value,
            witness=s.to_dict()["witness"], noise=noise_description(self.noise),
            framework=self.framework.digest(), notes=notes)

    def _group(self, scale: float, scale_for: Any) -> GroupComparison | None:
        g = self.framework.group_sensitivity
        if g is None:
            return None
        gs = float(scale_for(g))
        return GroupComparison(g, gs, (gs / scale) if scale > 0 else math.inf, self.framework.group_note)

    def release(self, values: Any, *, rng: Any = None, out: Any = None) -> np.ndarray:
        """values + noise, with puffer's samplers (``rng``: None, int, SeedSequence, Generator).
        With zero sensitivity no noise is needed and a copy (or ``out``) of values is returned."""
        from .. import sampling

        if self.noise is None:
            vals = np.asarray(values, dtype=np.float64)
            if out is None:
                return vals.copy()
            out[...] = vals
            return out
        return sampling.add_noise(values, self.noise, rng=rng, out=out)

    def close_adversary(self, alpha: float | None = None, *, w_inf: float | None = None,
                        d_inf: float | None = None, hp: float = 3.0, hq: float = 3.0, hr: float = 3.0):
        """The guarantee against an adversary with a prior theta' outside Theta (Pierquin et al.
        2024, App. A.4): ``d_inf`` (the D_inf distance of Thm A.3) for a PP guarantee, or
        ``w_inf`` (W_inf between the query laws under theta' and the nearest theta) and an order
        ``alpha`` for an additive mechanism (Thm A.5, Hoelder exponents hp, hq, hr with
        1/hp + 1/hq + 1/hr = 1). See :mod:`puffer.mechanisms.close_adversary`."""
        from . import close_adversary as ca
        from ..guarantees import PP as _PP

        prov = getattr(self.guarantee, "provenance", None)
        if d_inf is not None:
            if w_inf is not None or alpha is not None:
                raise ParameterError("d_inf", d_inf, "d_inf alone (Thm A.3) or w_inf with alpha (Thm A.5)")
            if not isinstance(self.guarantee, _PP):
                raise ParameterError("d_inf", d_inf, f"a PP guarantee for Thm A.3 ({type(self).__name__} "
                                                     "gives an RPP guarantee: use w_inf and alpha)")
            return ca.close_adversary_pp(self.guarantee.eps, d_inf, prov)
        if w_inf is None or alpha is None:
            raise ParameterError("w_inf", w_inf, "w_inf and alpha (Thm A.5), or d_inf (Thm A.3)")
        noise = self.noise
        if noise is None:
            raise ParameterError("w_inf", w_inf, "a mechanism that adds noise")
        eps_at = getattr(self, "epsilon", None)
        if eps_at is None:
            raise ParameterError("alpha", alpha, f"a mechanism with an RPP curve ({type(self).__name__} has none)")
        return ca.close_adversary_additive(alpha, eps_at, lambda o, z: float(noise.R(o, z)), w_inf,
                                           hp=hp, hq=hq, hr=hr, provenance=prov)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self.sensitivity.value!r}, noise={self.noise!r}, "
                f"guarantee={self.guarantee!r})")


def scale_up(x: float) -> float:
    """A noise scale rounded upward (more noise is the safe side)."""
    if not math.isfinite(x) or x < 0:
        raise ParameterError("scale", x, "a finite noise scale >= 0")
    return round_up(x)
