"""Guarantees against close adversaries, whose prior lies outside Theta.

Protection against close adversaries, theta' outside Theta (Pierquin, Bellet, Tommasi,
Boussard 2024, App. A.4; Song, Wang, Chaudhuri 2017, Thm A.3).

* :func:`close_adversary_pp` -- Thm A.3: eps-PP on Theta => (eps + 2 Delta)-PP on Theta u {theta'},
  Delta = inf_theta sup_s max of the two D_inf between P(X | s, theta) and P(X | s, theta').
* :func:`close_adversary_rpp` -- Thm A.4: with 1/p + 1/q + 1/r = 1 and (q(alpha - 1/p), eps)-RPP,
  (alpha, (1 + 1/(r(alpha-1))) eps + (1 + (1/r + 1/q)/(alpha-1)) Delta1_p + Delta2_r)-RPP.
* :func:`close_adversary_additive` -- Thm A.5 for additive mechanisms f(X) + N: Delta_theta' the W_inf
  distance between the query laws under theta' and the nearest theta,
  K = (1 + (1/r + 1/q)/(alpha-1)) R_{alpha p}(zeta, Delta) + R_{(alpha-1) r + 1}(zeta, Delta).

[!] The paper's proofs write the same D_inf twice (Thm A.3) and "+" between exponentials where
products are meant (Thm A.4); the statements implemented here are the self-consistent ones.
"""
from __future__ import annotations

from collections.abc import Callable

from .. import _validate as V
from ..errors import ParameterError
from ..guarantees import PP, RPP, Provenance, round_up

__all__ = ["close_adversary_pp", "close_adversary_rpp", "close_adversary_additive", "holder_triple"]

_THM = "Pierquin, Bellet, Tommasi, Boussard 2024, "


def holder_triple(hp: float, hq: float, hr: float) -> tuple[float, float, float]:
    """Check p, q, r > 0 with 1/p + 1/q + 1/r = 1 (to 1e-12)."""
    p = V.positive("hp", hp)
    q = V.positive("hq", hq)
    r = V.positive("hr", hr)
    if abs(1.0 / p + 1.0 / q + 1.0 / r - 1.0) > 1e-12:
        raise ParameterError("hr", hr, f"Hoelder exponents with 1/p + 1/q + 1/r = 1 (got {1/p + 1/q + 1/r!r})")
    return p, q, r


def close_adversary_pp(eps: float, d_inf: float, provenance: Provenance | None = None) -> PP:
    """Thm A.3: (eps + 2 Delta)-PP for Theta u {theta'}.

    >>> round(close_adversary_pp(1.0, 0.05).eps, 12)
    1.1
    """
    e = V.nonneg("eps", eps, allow_inf=True)
    d = V.nonneg("d_inf", d_inf, allow_inf=True)
    return PP(round_up(e + 2.0 * d), 0.0, _note(provenance, "Thm A.3 (close adversary, PP)"))


def close_adversary_rpp(alpha: float, eps_inner: float, div_p: float, div_r: float, *, hp: float, hq: float,
                        hr: float, provenance: Provenance | None = None) -> RPP:
    """Thm A.4: ``eps_inner`` is the RPP eps at order q (alpha - 1/p) on Theta; ``div_p`` =
    Delta1_p = inf_theta sup_s D_{alpha p}(P(X|s,theta') || P(X|s,theta)); ``div_r`` = Delta2_r =
    inf_theta sup_s D_{(alpha-1) r + 1}(P(X|s,theta) || P(X|s,theta'))."""
    a = V.alpha("alpha", alpha, allow_inf=False)
    p, q, r = holder_triple(hp, hq, hr)
    e = V.nonneg("eps_inner", eps_inner, allow_inf=True)
    d1 = V.nonneg("div_p", div_p, allow_inf=True)
    d2 = V.nonneg("div_r", div_r, allow_inf=True)
    val = (1.0 + 1.0 / (r * (a - 1.0))) * e + (1.0 + (1.0 / r + 1.0 / q) / (a - 1.0)) * d1 + d2
    return RPP(a, round_up(val, 8), _note(provenance, "Thm A.4 (close adversary, RPP)"))


def inner_order(alpha: float, hp: float, hq: float) -> float:
    """q (alpha - 1/p), the order at which the mechanism's RPP guarantee on Theta is needed."""
    o = hq * (alpha - 1.0 / hp)
    if not o > 1.0:
        raise ParameterError("alpha", alpha, f"q (alpha - 1/p) > 1 (got {o!r})")
    return o


def close_adversary_additive(alpha: float, eps_at: Callable[[float], float], R: Callable[[float, float], float],
                             w_inf: float, *, hp: float, hq: float, hr: float,
                             provenance: Provenance | None = None) -> RPP:
    """Thm A.5 for f(X) + N: ``eps_at(o)`` gives the mechanism's eps on Theta at order o,
    ``R(order, z)`` the noise's certified R; ``w_inf`` = Delta_theta'.

    >>> import math
    >>> from puffer.noise import Gaussian
    >>> g = Gaussian(math.sqrt(2.5))
    >>> r = close_adversary_additive(2.0, lambda o: float(g.R(o, 1.0)), lambda o, z: float(g.R(o, z)), 0.1,
    ...                              hp=3, hq=3, hr=3)
    >>> round(r.eps, 9)                     # Cor A.1: (1 + 1/3) + 0.028
    1.361333333
    """
    a = V.alpha("alpha", alpha, allow_inf=False)
    p, q, r = holder_triple(hp, hq, hr)
    z = V.nonneg("w_inf", w_inf)
    e = float(eps_at(inner_order(a, p, q)))
    K = (1.0 + (1.0 / r + 1.0 / q) / (a - 1.0)) * float(R(a * p, z)) + float(R((a - 1.0) * r + 1.0, z))
    val = (1.0 + 1.0 / (r * (a - 1.0))) * e + K
    return RPP(a, round_up(val, 8), _note(provenance, f"Thm A.5 (close adversary at W_inf distance {z!r})"))


def _note(prov: Provenance | None, what: str) -> Provenance:
    if prov is None:
        return Provenance(theorem=_THM + what)
    d = prov.to_dict()
    d["theorem"] = (d.get("theorem") or "") + "; " + _THM + what
    return Provenance(**d)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "close_adversary_pp": (Ref("pierquin2024", "Thm A.3"), Ref("song2017", "Thm A.3"),),
    "close_adversary_rpp": (Ref("pierquin2024", "Thm A.4"),),
    "close_adversary_additive": (Ref("pierquin2024", "Thm A.5"), Ref("pierquin2024", "Cor A.1"),),
}
