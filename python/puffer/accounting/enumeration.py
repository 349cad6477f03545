"""Exact composition totals on a finite class, by enumerating every edge of the target granularity.

Exact evaluation on a finite (enumerated) class (Guerra-Balboa et al. 2024, the edge form of
Thms IV.1 / IV.11, VI.4 / VI.7, VI.13 / VI.14, VI.21 / VI.22 via Thms III.3, VI.3, VI.12, VI.20).

For every edge D ~_G D' of the target granularity inside the class, each release's distance
n_i(D, D') is computed from the definitions: local scope — breadth-first distance between
f_i(D) and f_i(D') in the G_i-graph of the image class f_i(DD) (paths stay in the image,
Remark A.2); common scope — multi-source breadth-first distance between the fibres
{D~ : f_i(D~) = f_i(D)} and {D~ : f_i(D~) = f_i(D')} in the G_i-graph of DD (Prop. IV.10).
The edge loss aggregates the terms; the result is the maximum over edges. BFS runs in C++.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError
from . import databases as DB
from . import granularity as GR
from . import selectors as S
from .releases import INF, Release, terms

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["EnumerationResult", "enumerate_total", "release_distance"]


@dataclass
class EnumerationResult:
    """The maxima found by :func:`enumerate_total`, with the attaining edges and the releases they touch."""

    values: tuple[float, ...]
    edges: list[str]
    touched: list[list[int]]
    per_release: list[list[float]] = field(default_factory=list)   # per component: n_i on the worst edge
    n_edges: int = 0
    n_vertices: int = 0


class _ReleaseOracle:
    """n_i(D, D') for one release on an enumerated class."""

    def __init__(self, r: Release, domain: DB.DatabaseClass):
        self.r = r
        self.domain = domain
        self.local = r.scope == "local"
        self.space: DB.DatabaseClass
        sel: Any = r.selector
        self.opaque_local = isinstance(sel, S.Opaque) and self.local
        verts = domain.enumerate()
        self.img = {v: sel(v) for v in verts}
        if self.opaque_local:
            if sel.sensitivity is None:
                raise ParameterError("selector", sel, "an Opaque selector with a declared sensitivity "
                                     "(local scope: the release is certified on f(DD), whose metric puffer "
                                     "cannot see)")
            return
        if self.local:
            images = list(dict.fromkeys(self.img.values()))
            kind = "ordered" if domain.kind == "ordered" and not isinstance(sel, S.OrderCell) else (
                "opaque" if isinstance(sel, (S.OrderCell, S.Opaque)) else domain.kind)
            self.space = DB.Finite(images, kind=kind)
            self.graph = GR.enumerated(r.G, self.space)
        else:
            self.space = domain
            self.graph = GR.enumerated(r.G, domain)
            fib: dict[Any, list[int]] = {}
            for v in verts:
                fib.setdefault(self.img[v], []).append(self.graph.index[v])
            self.fibres = {k: np.asarray(ix, dtype=np.int64) for k, ix in fib.items()}
        self.cache: dict[Any, NDArray[np.int64]] = {}

    def _bfs(self, key: Any, sources: NDArray[np.int64]) -> NDArray[np.int64]:
        from .._core import accounting as _acc
        if key not in self.cache:
            self.cache[key] = _acc.bfs_multi(self.graph.indptr, self.graph.indices, sources, -1)
        return self.cache[key]

    def n(self, D: Any, D2: Any) -> float:
        a, b = self.img[D], self.img[D2]
        if a == b:
            return 0.0
        if self.opaque_local:
            return float(self.r.selector.sensitivity)  # type: ignore[attr-defined]
        if self.local:
            ia, ib = self.graph.index[a], self.graph.index[b]
            d = self._bfs(a, np.asarray([ia], dtype=np.int64))[ib]
            return INF if d < 0 else float(d)
        dist = self._bfs(a, self.fibres[a])
        d = dist[self.fibres[b]]
        d = d[d >= 0]
        return float(d.min()) if d.size else INF


def release_distance(r: Release, domain: DB.DatabaseClass, D: Any, D2: Any) -> float:
    """n_i(D, D2) for one release on an enumerable class."""
    return _ReleaseOracle(r, domain).n(domain.canon(D, "D"), domain.canon(D2, "D2"))


def enumerate_total(releases: list[Release], target: GR.Granularity, domain: DB.DatabaseClass,
                    notion: str) -> EnumerationResult:
    """The composed total by enumerating every edge of the target granularity on a finite ``domain``."""
    ncomp = 2 if notion == "approx" else 1
    g = GR.enumerated(target, domain)
    oracles = [_ReleaseOracle(r, domain) for r in releases]
    best = [-1.0] * ncomp
    where: list[tuple[Any, Any, list[float]] | None] = [None] * ncomp
    n_edges = 0
    for u in range(g.n):
        D = g.vertices[u]
        for w in g.indices[g.indptr[u]:g.indptr[u + 1]]:
            if w < u:
                continue  # undirected: each edge once
            D2 = g.vertices[int(w)]
            n_edges += 1
            ns = [o.n(D, D2) for o in oracles]
            acc = [0.0] * ncomp
            for r, n in zip(releases, ns):
                for c, t in enumerate(terms(r.guarantee, n)):
                    acc[c] += t
            for c in range(ncomp):
                if acc[c] > best[c]:
                    best[c] = acc[c]
                    where[c] = (D, D2, ns)
            if all(math.isinf(b) for b in best):
                break
    vals: list[float] = []
    edges: list[str] = []
    touched: list[list[int]] = []
    per: list[list[float]] = []
    for c in range(ncomp):
        wc = where[c]
        if wc is None:
            vals.append(0.0)
            edges.append("the class has no edge of the target granularity")
            touched.append([])
            per.append([])
            continue
        D, D2, ns = wc
        vals.append(best[c])
        edges.append(f"{_show(D)} ~ {_show(D2)}")
        touched.append([r.index for r, n in zip(releases, ns) if n != 0])
        per.append(ns)
    return EnumerationResult(tuple(vals), edges, touched, per, n_edges, g.n)


def _show(D: Any) -> str:
    if isinstance(D, frozenset):
        items = sorted(D, key=lambda p: repr(p[0]))
        return "{" + ", ".join(", ".join([repr(x)] * m) for x, m in items) + "}"
    return repr(D)
