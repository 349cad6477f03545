"""The human-readable account of a composition: theorem, attaining edge and each release's share.

Human-readable account of a composition: the theorem used, the edge of the target
granularity that attains the maximum and what each release it touches contributes there
(Guerra-Balboa et al. 2024, the edge form of Thm IV.11 and its analogues)."""
from __future__ import annotations

import math
from typing import Any

__all__ = ["explain"]


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _params(r: Any) -> str:
    g = r.guarantee
    if g.notion == "rdp":
        return f"RDP curve, {len(g.alphas)} orders"
    return ", ".join(f"{p}={_fmt(getattr(g, p))}" for p in g._params)


def _term(r: Any, n: float) -> str:
    from .releases import terms
    if r.guarantee.notion == "rdp":
        return "eps_i(alpha)" if n == 1 else ("0" if n == 0 else "inf")
    t = terms(r.guarantee, n)
    if r.guarantee.notion == "approx":
        return f"(eps {_fmt(t[0])}, delta {_fmt(t[1])})"
    if r.guarantee.notion == "gdp":
        return f"mu^2 n^2 = {_fmt(t[0])}"
    return _fmt(t[0])


def explain(acc: Any) -> str:
    """The explanation text of ``acc.result()``."""
    res = acc.result()
    lines = [f"Composition of {len(acc.releases)} releases: {acc.granularity!r} on {acc.domain!r}, "
             f"notion {acc.notion}"]
    lines.append(f"  strategy : {res.strategy}")
    lines.append(f"  theorem  : {res.theorem}")
    lines.append(f"  total    : {res.guarantee!r}")
    if res.reason:
        lines.append(f"  why      : {res.reason}")
    lines.append(f"  worst edge: {res.edge}")
    touched = list(res.touched)
    lines.append(f"  releases changed on it: {len(touched)} of {len(acc.releases)}")
    for i in touched[:20]:
        r = acc.releases[i]
        n = res.n_on_edge.get(i)
        nn = "?" if n is None else _fmt(n)
        lines.append(f"    [{i}] {r.label:<24} {_params(r):<24} {r.selector!r:<28} {r.scope:<6} n={nn:<4} "
                     f"loss {_term(r, n) if n is not None else '?'}")
    if len(touched) > 20:
        lines.append(f"    ... {len(touched) - 20} more")
    if res.sequential is not None:
        s = res.sequential
        s_txt = f"({_fmt(s[0])}, {_fmt(s[1])})" if isinstance(s, tuple) else _fmt(s)
        lines.append(f"  sequential composition would give: {s_txt}")
    return "\n".join(lines)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "explain": (Ref("guerrabalboa2024", "Thm IV.11"),),
}
