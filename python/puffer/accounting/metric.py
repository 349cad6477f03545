"""Metric forms of the DP-type guarantees, through which releases of any granularity compose.

Metric forms of the DP-type guarantees (Guerra-Balboa et al. 2024): G eps-DP is
``eps d^G``-privacy (Thm III.3), G (eps, delta)-DP is ``(eps d^G, delta [d^G]_eps)``-privacy
(Thm VI.3), G rho-zCDP is ``rho (d^G)^2``-zCprivacy (Thm VI.12) and G mu-GDP is
``mu d^G``-Gprivacy (Thm VI.20). ``bound(D, D2)`` evaluates the guarantee between any two
databases of the class (with ``0 * inf = inf``: databases in different components are not
protected).

>>> from puffer.accounting import PureDP, Unbounded
>>> PureDP(0.5, granularity=Unbounded()).to_metric().bound(["a"], ["b", "c"])
1.5
"""
from __future__ import annotations

import math
from typing import Any

from ..errors import ParameterError

__all__ = ["MetricForm"]


class MetricForm:
    """The metric form of a DP-type guarantee that names its granularity."""

    def __init__(self, guarantee: Any):
        if getattr(guarantee, "granularity", None) is None:
            raise ParameterError("guarantee", guarantee, "a DP-type guarantee that names its granularity")
        self.guarantee = guarantee

    def distance(self, D: Any, D2: Any) -> float:
        g = self.guarantee
        d: float = g.granularity.distance(D, D2, g.domain)  # Granularity.distance returns a float
        return d

    def bound(self, D: Any, D2: Any) -> Any:
        """pure: eps d; approx: (eps d, delta [d]_eps); zCDP: the coefficient rho d^2 of alpha;
        GDP: mu d. inf where d = inf (whatever the parameter, 0 * inf = inf)."""
        g = self.guarantee
        d = self.distance(D, D2)
        if math.isinf(d):
            return (math.inf, math.inf) if g.notion == "approx" else math.inf
        n = int(d)
        out = g.group(n)
        if g.notion == "pure":
            return out.eps
        if g.notion == "approx":
            from ..guarantees._base import _mul_up
            return (_mul_up(g.eps, n), g.group_delta(n))
        if g.notion == "zcdp":
            return out.rho
        return out.mu

    def __repr__(self) -> str:
        g = self.guarantee
        scale = {"pure": f"{g.eps!r} d", "zcdp": f"{g.rho!r} d^2", "gdp": f"{g.mu!r} d"}.get(
            g.notion, f"({g.eps!r} d, {g.delta!r} [d]_eps)" if g.notion == "approx" else "?")
        return f"MetricForm({scale}, d = d^{g.granularity!r})"

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "MetricForm": (Ref("guerrabalboa2024", "Thm III.3"), Ref("guerrabalboa2024", "Thm VI.3"), Ref("guerrabalboa2024", "Thm VI.12"), Ref("guerrabalboa2024", "Thm VI.20"),),
}
