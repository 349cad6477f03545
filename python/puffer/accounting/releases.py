"""One composed release (guarantee, selector, scope) and the distance it sees on an edge.

One composed release (guarantee + selector + scope) and the per-edge distance n_i it sees
(Guerra-Balboa et al. 2024; the unified reduction of Thms III.3, VI.3, VI.12, VI.20).

On an edge D ~_G D' of the target granularity, release i contributes through
``n_i(D, D')``, the distance its own guarantee sees:

* ``scope="local"`` (variable domain, Thm IV.1 / V.2 / VI.4 / VI.13 / VI.21): the guarantee is
  certified for M*_i on DD_i = f_i(DD); ``n_i = d^{G_i}_{DD_i}(f_i(D), f_i(D'))``, the intrinsic
  distance in the image class (Remark A.2), possibly inf.
* ``scope="common"`` (Thm IV.11 / V.5 / VI.7 / VI.14 / VI.22): certified for M_i = M*_i o f_i
  on DD and f_i-dependent; ``n_i = d^{G_i, f_i}(D, D')`` (fibre distance, Prop. IV.10), 0 when
  f_i(D) = f_i(D').

Edge terms (0 * inf = inf): pure eps n; approx (eps n, delta [n]_eps); zCDP rho n^2;
GDP (mu n)^2 (summed, then the square root).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..guarantees.dp import ApproxDP, DPGuarantee, group_factor
from . import databases as DB
from . import granularity as GR
from . import selectors as S

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Release", "terms", "INF"]

INF = math.inf


@dataclass(frozen=True)
class Release:
    """A release as the accountant holds it."""

    index: int
    guarantee: DPGuarantee      # notion-converted, granularity filled in
    selector: S.Selector
    scope: str                  # "common" | "local"
    label: str

    @property
    def G(self) -> GR.Granularity:
        return cast(GR.Granularity, self.guarantee.granularity)  # filled in by the accountant

    def params(self) -> tuple[float, ...]:
        g = self.guarantee
        return tuple(getattr(g, p) for p in g._params)

    def describe(self) -> str:
        return f"[{self.index}] {self.label}: {self.guarantee!r}, {self.selector!r}, {self.scope}"


def _mul(a: float, n: float) -> float:
    """a * n with 0 * inf = inf (a 0-DP guarantee says nothing across components, Ex. II.9)."""
    if math.isinf(n):
        return INF
    return a * n


@dataclass(frozen=True)
class RDPOrder:
    """One order of an RDP curve, composed like a scalar: n = 0 contributes 0, n = 1 contributes
    eps(alpha); n >= 2 (or inf) has no group form and contributes inf (Guerra-Balboa et al. 2024
    list RDP as future work; this is the edge-level form only)."""

    eps: float
    granularity: Any = None
    domain: Any = None
    notion = "rdp1"
    _params = ("eps",)


def terms(g: Any, n: float) -> tuple[float, ...]:
    """The edge term(s) of guarantee g at distance n: a 1-tuple, or (eps, delta) for approx."""
    if g.notion == "rdp1":
        return (0.0,) if n == 0 else ((g.eps,) if n == 1 else (INF,))
    if g.notion == "pure":
        return (_mul(g.eps, n),)
    if g.notion == "approx":
        assert isinstance(g, ApproxDP)
        if math.isinf(n):
            return (INF, INF)
        d = 0.0 if (g.delta == 0.0 or n == 0) else g.delta * group_factor(n, g.eps)
        return (g.eps * n, d)
    if g.notion == "zcdp":
        return (INF,) if math.isinf(n) else (g.rho * n * n,)
    if math.isinf(n):
        return (INF,)
    t = (g.mu * n) ** 2
    if t == 0.0 and g.mu > 0.0 and n > 0:
        t = 5e-324  # (mu n)^2 underflowed: keep it positive so sqrt never reports mu = 0
    return (t,)


def param_arrays(releases: list[Release], notion: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(p0, p1): eps / rho / mu per release, and delta (approx) or zeros."""
    first = {"pure": "eps", "approx": "eps", "zcdp": "rho", "gdp": "mu"}[notion]
    p0 = np.fromiter((getattr(r.guarantee, first) for r in releases), dtype=np.float64, count=len(releases))
    if notion == "approx":
        p1 = np.fromiter((cast(ApproxDP, r.guarantee).delta for r in releases), dtype=np.float64, count=len(releases))
    else:
        p1 = np.zeros(len(releases))
    return p0, p1


def terms_vec(notion: str, p0: NDArray[np.float64], p1: NDArray[np.float64], n: NDArray[np.float64]
              ) -> list[NDArray[np.float64]]:
    """Vectorised :func:`terms` (same rounding: the group factor is moved up 6 ulps)."""
    inf = np.isinf(n)
    nf = np.where(inf, 0.0, n)
    with np.errstate(over="ignore", invalid="ignore"):
        if notion == "rdp1":
            return [np.where(n == 0, 0.0, np.where(n == 1, p0, INF))]
        if notion == "pure":
            return [np.where(inf, INF, p0 * nf)]
        if notion == "approx":
            eps_t = np.where(inf, INF, p0 * nf)
            safe = np.where(p0 > 0, p0, 1.0)
            gf = np.where(p0 > 0, np.expm1(safe * nf) / np.expm1(safe), nf)
            for _ in range(6):
                gf = np.nextafter(gf, INF)
            # e^eps - 1 overflows from eps = 710 on (inf / inf = NaN): those entries, and every
            # large eps n, by the core's log-space form (n = 1 gives 1 at any eps)
            big = (p0 > 0) & ~inf & (safe * nf >= 700.0)
            if big.any():
                gf[big] = [group_factor(float(a), float(b)) for a, b in zip(nf[big], p0[big])]
            d = np.where((p1 == 0) | (nf == 0), 0.0, p1 * np.where(p0 > 0, gf, nf))
            return [eps_t, np.where(inf, INF, d)]
        if notion == "zcdp":
            return [np.where(inf, INF, p0 * nf * nf)]
        t = (p0 * nf) ** 2
        t = np.where((t == 0) & (p0 > 0) & (nf > 0), 5e-324, t)
        return [np.where(inf, INF, t)]


# --- closed forms of n_i for record-level selectors (the footprint strategy) -----------------

def _padding(sel: S.Selector, domain: DB.DatabaseClass) -> bool | None:
    """Whether the universe has a record the selector does not see (needed to keep sizes equal
    in a fibre, Cor. IV.15). None if it cannot be decided (universe not given)."""
    if isinstance(sel, S.Identity):
        return False
    if domain.X is None:
        return None
    return any(not sel.sees(x) for x in domain.X)


def n_one_both_cached(r: Release, target: GR.Granularity, domain: DB.DatabaseClass,
                      memo: dict[Any, tuple[float, float, str]]
                      ) -> tuple[float, float, str]:
    """:func:`n_one_both` memoised on what it depends on (the selector itself only where the
    answer depends on padding records)."""
    sel, G = r.selector, r.G
    local = r.scope == "local"
    pad_dep = (isinstance(target, GR.Unbounded) and isinstance(G, GR.Bounded) and not local) or \
        (isinstance(target, GR.Bounded) and isinstance(G, GR.Unbounded) and local)
    key = (type(sel), G, r.scope, getattr(sel, "sensitivity", None), sel if pad_dep else None)
    try:
        return memo[key]
    except KeyError:
        memo[key] = v = n_one_both(r, target, domain)
        return v
    except TypeError:  # unhashable selector
        return n_one_both(r, target, domain)


def n_one_both(r: Release, target: GR.Granularity, domain: DB.DatabaseClass) -> tuple[float, float, str]:
    """(n_one, n_both, note) on target edges, for a selector that sees a changed record on one
    side only (n_one: an add/remove under U; a replace moving a record in or out of the
    selection under B) or on both sides (n_both: a replace inside the selection under B).
    The note explains an infinite value."""
    G, sel, local = r.G, r.selector, r.scope == "local"
    if isinstance(sel, S.Opaque) and local:
        if sel.sensitivity is None:
            return INF, INF, "Opaque selector in the local setting needs a declared sensitivity"
        return sel.sensitivity, sel.sensitivity, "declared sensitivity (Prop. III.6)"
    if isinstance(G, GR.FreeLunch):
        return 1.0, 1.0, ""
    fixed = isinstance(domain, DB.FixedSize)
    if isinstance(target, GR.Unbounded):
        if isinstance(G, GR.Unbounded):
            return 1.0, 1.0, ""
        if isinstance(G, GR.Bounded):
            if local:
                return INF, INF, "bounded guarantee on DD_i, but an add/remove changes the size of f_i(D)"
            if isinstance(sel, S.Opaque):
                return INF, INF, "bounded guarantee, unbounded edge, fibres unknown for an Opaque selector"
            pad = _padding(sel, domain)
            if pad:
                return 1.0, 1.0, "fibre distance with padding records (Cor. IV.15)"
            why = ("the universe X is not given, so padding records outside the selection cannot be assumed"
                   if pad is None else "no record outside the selection to pad with: sizes differ")
            return INF, INF, f"bounded guarantee under unbounded edges: {why}"
    if isinstance(target, GR.Bounded):
        if isinstance(G, GR.Bounded):
            if local and not isinstance(sel, S.Identity):
                return INF, 1.0, "Ex. II.9: a replacement moving a record in or out of f_i(D) changes its size"
            return 1.0, 1.0, ""
        if isinstance(G, GR.Unbounded):
            if fixed and (not local or not _padding(sel, domain)):
                why = "" if not local else (" (f_i(DD) is the fixed-size class itself: no record outside the "
                                            "selection" + (", or X not given)" if domain.X is None else ")"))
                return INF, INF, f"unbounded guarantee on the fixed-size class: d^U = inf there (Ex. III.4){why}"
            return 1.0, 2.0, "unbounded guarantee under a replacement: d^U = 2 (dist(U, B) = 2)"
    raise_incompatible(G, target)
    return INF, INF, ""  # unreachable


def raise_incompatible(G: Any, target: Any) -> None:
    """Refuse a release whose granularity cannot be compared with the target without enumeration."""
    from ..errors import ParameterError
    raise ParameterError("granularity", G, f"a granularity comparable with the target {target!r} "
                         "without enumeration (FreeLunch, Unbounded, Bounded on multisets; OrderedBounded "
                         "on ordered tables); give a finite domain to enumerate")

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "terms": (Ref("guerrabalboa2024", "Thm IV.1"), Ref("guerrabalboa2024", "Thm IV.11"),),
}
