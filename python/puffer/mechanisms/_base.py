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

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self.sensitivity.value!r}, noise={self.noise!r}, "
                f"guarantee={self.guarantee!r})")


def scale_up(x: float) -> float:
    """A noise scale rounded upward (more noise is the safe side)."""
    if not math.isfinite(x) or x < 0:
        raise ParameterError("scale", x, "a finite noise scale >= 0")
    return round_up(x)
