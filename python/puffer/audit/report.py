"""The result of an empirical audit: what was claimed, what the samples prove, and where."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..guarantees import PP, RPP

__all__ = ["AuditReport", "PairAudit"]


def _num(x: float) -> Any:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass(frozen=True)
class PairAudit:
    """One audited direction: prior ``theta``, ordered pair (s_i, s_j) (the loss of s_i against
    s_j), the lower confidence bound, the plug-in estimate with its delta-method s.e. on the
    evaluation half, and the witness (the event or the partition that was used)."""

    theta: Any
    pair: tuple[Any, Any]
    lower: float
    estimate: float
    se: float
    witness: str

    def to_dict(self) -> dict[str, Any]:
        from ..framework import _jsonable
        return {"theta": _jsonable(self.theta), "pair": [_jsonable(s) for s in self.pair],
                "lower": _num(self.lower), "estimate": _num(self.estimate), "se": _num(self.se),
                "witness": self.witness}


@dataclass(frozen=True)
class AuditReport:
    """An empirical privacy audit of one mechanism (see :func:`puffer.audit.empirical`).

    ``kind`` is ``"pp"`` ((eps, delta)-PP; ``delta`` is the claim's delta) or ``"rpp"``
    ((alpha, eps)-RPP at order ``alpha``). ``claimed`` is the eps claimed, ``lower`` the
    empirical lower confidence bound on the true eps over every audited prior, pair and
    direction, valid simultaneously at ``confidence``: a correct mechanism has
    P(lower > claimed) <= 1 - confidence. ``violated`` is ``lower > claimed``.
    """

    mechanism: str
    kind: str
    claimed: float
    alpha: float | None
    delta: float
    lower: float
    estimate: float
    se: float
    confidence: float
    n: int
    statistic: str
    witness: PairAudit | None
    pairs: tuple[PairAudit, ...] = field(repr=False)
    samples: int = field(default=0, repr=False)
    seconds: float = field(default=0.0, repr=False)
    claim: PP | RPP | None = field(default=None, repr=False, compare=False)

    @property
    def violated(self) -> bool:
        """True when the samples prove, at the stated confidence, that the true eps exceeds the claim."""
        return self.lower > self.claimed

    @property
    def ratio(self) -> float:
        """Tightness lower / claimed (0 when nothing was claimed to leak; > 1 is a violation)."""
        if self.claimed == 0:
            return math.inf if self.lower > 0 else 0.0
        return self.lower / self.claimed

    @property
    def interval(self) -> tuple[float, float]:
        """The one-sided confidence interval [lower, inf) for the true eps (at ``confidence``)."""
        return (self.lower, math.inf)

    @property
    def samples_per_second(self) -> float:
        """Mechanism outputs drawn and scored per second (both secrets, both halves)."""
        return self.samples / self.seconds if self.seconds > 0 else math.inf

    def power(self, claimed: float | None = None) -> float:
        """Approximate probability that a rerun with the same ``n`` proves ``eps > claimed``
        (default: this report's claim): Phi((lower - claimed) / se), a normal approximation of
        the rerun's lower bound around the observed one, with the witness's plug-in s.e."""
        from scipy.special import ndtr

        c = self.claimed if claimed is None else float(claimed)
        if not (self.se > 0 and math.isfinite(self.se)):
            return 1.0 if self.lower > c else 0.0
        return float(ndtr((self.lower - c) / self.se))

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "kind": self.kind, "claimed": _num(self.claimed),
                "alpha": None if self.alpha is None else _num(self.alpha), "delta": self.delta,
                "lower": _num(self.lower), "estimate": _num(self.estimate), "se": _num(self.se),
                "ratio": _num(self.ratio), "violated": self.violated, "confidence": self.confidence,
                "n": self.n, "statistic": self.statistic,
                "witness": None if self.witness is None else self.witness.to_dict(),
                "pairs": [p.to_dict() for p in self.pairs], "samples": self.samples,
                "seconds": self.seconds}

    def describe_claim(self) -> str:
        if self.kind == "rpp":
            return f"({self.alpha:g}, {self.claimed:.4g})-RPP"
        return f"({self.claimed:.4g}, {self.delta:g})-PP" if self.delta else f"{self.claimed:.4g}-PP"

    def __repr__(self) -> str:
        verdict = "VIOLATED" if self.violated else "ok"
        return (f"AuditReport({self.mechanism}: claimed {self.describe_claim()}, empirical lower bound "
                f"{self.lower:.4g} at {self.confidence:g} confidence, ratio {self.ratio:.3f}, {verdict})")
