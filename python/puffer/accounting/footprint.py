"""Closed-form composition totals for record-level selectors, from the releases' footprints.

Footprint closed forms for record-level selectors (Guerra-Balboa et al. 2024, Thm IV.11 and
its approximate / zCDP / GDP analogues VI.7, VI.14, VI.22; special cases Thm IV.3 (sequential),
Thm IV.12 (parallel, unbounded), Cor. IV.13 and Cor. A.18 (bounded over a record partition)).

The footprint of a record x is A(x) = {i : release i sees x}. An unbounded edge (add or remove
x) changes exactly the releases in A(x); a bounded edge (replace x by x' != x) changes
A(x) u A(x'), the releases in A(x) n A(x') seeing both sides. With F the family of realisable
footprints, the composed parameter is

    unbounded:  max_{S in F} sum_{i in S} t_i(n_one)
    bounded:    max_{S, T in F} sum_{i in S xor T} t_i(n_one) + sum_{i in S n T} t_i(n_both)

(S = T only when two distinct records share the footprint). The maxima run in the C++ core
(``cpp/accounting``), exact, with a pruned O(|F|^2 k) pair search.

On ordered tables under ordered bounded DP (Ex. IV.7, Prop. A.6) an edge changes the value of
one identifier, so exactly the cells containing that identifier change: the single-set form
over identifier footprints.
"""
from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from . import databases as DB
from . import granularity as GR
from . import selectors as S
from .releases import INF, Release, n_one_both_cached, terms, terms_vec

__all__ = ["FootprintResult", "footprint_total", "applicable", "PRODUCT_LIMIT"]

#: the most footprints puffer builds for records outside every filter when X is not given
PRODUCT_LIMIT = 100_000


@dataclass
class FootprintResult:
    """The closed-form edge maxima of record-level releases, with the attaining edges and footprints."""

    values: tuple[float, ...]         # per component (1, or 2 for approx): the edge maximum (float)
    edges: list[str]                  # per component: a description of the attaining edge
    touched: list[list[int]]          # per component: release indices changed on that edge
    n_of: dict[int, tuple[float, float, str]] = field(default_factory=dict)  # index -> (n_one, n_both, note)
    n_on_edge: dict[int, float] = field(default_factory=dict)  # release index -> n_i on the worst edge (comp. 0)
    n_footprints: int = 0
    pairs_evaluated: int = 0
    terms: int = 0
    notes: dict[int, str] | None = None            # release index -> why n is what it is (non-trivial only)


class _Outside:
    """A symbolic record outside every RecordFilter (universe not given)."""

    def __init__(self, cells: tuple[Any, ...]):
        self.cells = cells

    def __repr__(self) -> str:
        cells = [repr(c) for c in self.cells if c is not None]
        if not cells:
            return "<a record no filter or cell selects>"
        return f"<a record of cell {', '.join(cells)}>"


class FootprintIndex:
    """What the footprint strategy needs, built release by release as they are added (so that
    ``total()`` does vectorised work only): per-release distances (n_one, n_both), parameters,
    and the inverse index record value -> releases reading it."""

    def __init__(self, target: GR.Granularity, domain: DB.DatabaseClass, notion: str):
        self.target, self.domain, self.notion = target, domain, notion
        self.memo: dict[Any, tuple[float, float, str]] = {}
        self.n_of: dict[int, tuple[float, float, str]] = {}
        self.const: list[Release] = []
        self.rec: list[Release] = []
        self.pos: dict[int, int] = {}
        self.filters: dict[Hashable, array[int]] = {}
        self.partitions: dict[int, tuple[S.Partition, dict[Hashable, list[int]]]] = {}
        self.opaque: list[tuple[int, Release]] = []
        self.p0 = array("d")   # typed buffers: total() hands them to numpy without a copy loop
        self.p1 = array("d")
        self.n1 = array("d")
        self.n2 = array("d")
        self.notes: dict[int, str] = {}
        self.ok = True

    def add(self, r: Release) -> None:
        if not self.ok:
            return
        try:
            self.n_of[r.index] = n = n_one_both_cached(r, self.target, self.domain, self.memo)
            if n[2]:
                self.notes[r.index] = n[2]
        except ParameterError:
            self.ok = False  # not a closed-form case; applicable() will say why
            return
        sel = r.selector
        if type(sel) is S.Identity or not sel.record_level:
            self.const.append(r)
            return
        self.pos[r.index] = len(self.rec)
        self.rec.append(r)
        g: Any = r.guarantee
        self.p0.append(getattr(g, g._params[0]))
        self.p1.append(g.delta if self.notion == "approx" else 0.0)
        self.n1.append(n[0])
        self.n2.append(n[1])
        if type(sel) is S.RecordFilter:
            idx = self.pos[r.index]   # footprints hold positions in self.rec
            for v in sel.values:
                lst = self.filters.get(v)
                if lst is None:
                    self.filters[v] = array("q", (idx,))
                else:
                    lst.append(idx)
        elif isinstance(sel, S.PartitionCell):
            p = sel.partition
            self.partitions.setdefault(id(p), (p, {}))[1].setdefault(sel.cell, []).append(self.pos[r.index])
        elif isinstance(sel, S.Opaque):
            self.opaque.append((self.pos[r.index], r))
        else:
            raise ParameterError("selector", sel, "a record-level selector")


def applicable(releases: list[Release], target: GR.Granularity, domain: DB.DatabaseClass) -> str | None:
    """None if the footprint strategy applies, else the reason it does not."""
    kinds: dict[tuple[type[S.Selector], GR.Granularity], Release] = {}
    for r in releases:  # decide on one representative per (selector type, granularity)
        kinds.setdefault((type(r.selector), r.G), r)
    releases = list(kinds.values())
    if isinstance(target, GR.OrderedBounded):
        if not isinstance(domain, DB.Ordered):
            return "ordered bounded target needs an Ordered class"
        for r in releases:
            if not isinstance(r.selector, (S.Identity, S.OrderCell, S.Opaque)):
                return f"release {r.index}: {r.selector!r} is not an identifier selector"
            if not isinstance(r.G, (GR.OrderedBounded, GR.FreeLunch)):
                return f"release {r.index}: granularity {r.G!r} on ordered tables needs enumeration"
        return None
    if isinstance(target, GR.FreeLunch):
        return None
    if not isinstance(target, (GR.Unbounded, GR.Bounded)):
        return f"target {target!r} has no closed form (finite domain needed)"
    if not isinstance(domain, (DB.AllMultisets, DB.FixedSize)):
        return f"class {domain!r} is not D_X or a fixed-size class"
    for r in releases:
        if isinstance(r.selector, S.OrderCell):
            return f"release {r.index}: an identifier cell on multisets"
        if not isinstance(r.G, (GR.Unbounded, GR.Bounded, GR.FreeLunch)):
            return f"release {r.index}: granularity {r.G!r} needs enumeration"
    return None


def _components(notion: str) -> int:
    return 2 if notion == "approx" else 1


def _edge_terms(r: Release, n: float, notion: str) -> tuple[float, ...]:
    return terms(r.guarantee, n)


def footprint_total(releases: list[Release], target: GR.Granularity, domain: DB.DatabaseClass,
                    notion: str, index: FootprintIndex | None = None) -> FootprintResult:
    """The edge maximum of the composed releases by footprints (see the module docstring)."""
    from .._core import accounting as _acc

    ncomp = _components(notion)
    if isinstance(target, GR.FreeLunch):
        # every release may change on a free-lunch edge (D vs a database sharing nothing with it)
        vals, n_of = [0.0] * ncomp, {}
        for r in releases:
            n = 1.0 if (isinstance(r.G, GR.FreeLunch) or (isinstance(r.selector, S.Opaque) and r.scope == "local"
                                                          and r.selector.sensitivity is not None)) else INF
            if isinstance(r.selector, S.Opaque) and r.scope == "local" and r.selector.sensitivity is not None:
                n = r.selector.sensitivity
            note = "" if n < INF else "free-lunch edges join databases at unbounded distance under " + repr(r.G)
            n_of[r.index] = (n, n, note)
            for c, t in enumerate(_edge_terms(r, n, notion)):
                vals[c] += t
        allr = [r.index for r in releases]
        return FootprintResult(tuple(vals), ["any two distinct databases"] * ncomp, [allr] * ncomp, n_of,
                               {i: v[0] for i, v in n_of.items()}, 1, 1, len(releases))
    if isinstance(target, GR.OrderedBounded):
        return _ordered(releases, notion)

    bounded = isinstance(target, GR.Bounded)
    if index is None:
        index = FootprintIndex(target, domain, notion)
        for r in releases:
            index.add(r)
    n_of, const, rec = index.n_of, index.const, index.rec
    # constants: releases that change on every edge (Identity; Opaque without may_change)
    cvals = [0.0] * ncomp
    for r in const:
        n1, n2, _ = n_of[r.index]
        n = n2 if bounded else n1
        for c, t in enumerate(_edge_terms(r, n, notion)):
            cvals[c] += t
    fps, reps, counts = _family_from(index.filters, index.partitions, index.opaque, domain)
    lens = np.fromiter((len(fp) for fp in fps), dtype=np.int64, count=len(fps))
    indptr = np.zeros(len(fps) + 1, dtype=np.int64)
    np.cumsum(lens, out=indptr[1:])
    indices = np.frombuffer(b"".join(fp.tobytes() for fp in fps), dtype=np.int64) if fps else \
        np.zeros(0, dtype=np.int64)
    p0, p1 = np.asarray(index.p0, dtype=np.float64), np.asarray(index.p1, dtype=np.float64)
    n1v, n2v = np.asarray(index.n1, dtype=np.float64), np.asarray(index.n2, dtype=np.float64)
    t1 = np.asarray(terms_vec(notion, p0, p1, n1v)).reshape(ncomp, len(rec))
    t2 = np.asarray(terms_vec(notion, p0, p1, n2v)).reshape(ncomp, len(rec))
    self_ok = np.asarray([c >= 2 for c in counts], dtype=np.uint8)
    vals, edges, touched = [], [], []
    evaluated, nterms = 0, 0
    const_idx = [r.index for r in const]
    n_on: dict[int, float] = {}
    for c in range(ncomp):
        if not fps:
            vals.append(cvals[c])
            edges.append("no record-level release")
            touched.append(const_idx)
            continue
        if bounded:
            v, s, t, nt, ev = _acc.footprint_max_pair(indptr, indices, self_ok, t1[c], t2[c])
        else:
            v, s, t, nt, ev = _acc.footprint_max_single(indptr, indices, t1[c])
        evaluated += ev
        nterms = max(nterms, nt + len(const))
        if s < 0:  # no bounded edge inside the selections (one record value only)
            vals.append(cvals[c])
            edges.append("no edge changes a record-level selection")
            touched.append(const_idx)
            continue
        vals.append(v + cvals[c])
        S_ = [rec[j].index for j in fps[s]]   # positions -> release indices
        if bounded:
            T_ = [rec[j].index for j in fps[t]]
            x = reps[s][0]
            y = reps[t][1] if s == t else reps[t][0]
            edges.append(f"replace record {x!r} by {y!r}")
            touched.append(const_idx + sorted(set(S_) | set(T_)))
            if c == 0:
                n_on = {i: n_of[i][1] if (i in S_ and i in T_) else n_of[i][0] for i in set(S_) | set(T_)}
        else:
            edges.append(f"add or remove record {reps[s][0]!r}")
            touched.append(const_idx + sorted(S_))
            if c == 0:
                n_on = {i: n_of[i][0] for i in S_}
    for r in const:
        n_on[r.index] = n_of[r.index][1] if bounded else n_of[r.index][0]
    out = FootprintResult(tuple(vals), edges, touched, n_of, n_on, len(fps), evaluated, nterms)
    out.notes = index.notes
    return out


def _family_from(filters: dict[Hashable, array[int]],
                 partitions: dict[int, tuple[S.Partition, dict[Hashable, list[int]]]],
                 opaque: list[tuple[int, Release]], domain: DB.DatabaseClass
                 ) -> tuple[list[array[int]], list[list[Any]], list[int]]:
    """Distinct footprints (sorted int64 arrays of release positions), up to two representative
    records each, and how many records share each (2 meaning 'at least two')."""
    empty = array("q")

    def footprint(x: Any) -> array[int]:
        fp = filters.get(x)
        if not partitions and not opaque:
            return fp if fp is not None else empty   # positions were appended in increasing order
        out = list(fp or ())
        for p, cells in partitions.values():
            c = p.cell_of(x)
            if c is not None:
                out.extend(cells.get(c, ()))
        out.extend(j for j, r in opaque if r.selector.sees(x))
        return array("q", sorted(out))

    slot: dict[bytes, int] = {}
    fps: list[array[int]] = []
    reps: list[list[Any]] = []
    counts: list[int] = []

    def put(fp: array[int], x: Any, many: bool = False) -> None:
        key = fp.tobytes()
        k = slot.get(key)
        if k is None:
            slot[key] = len(fps)
            fps.append(fp)
            reps.append([x] if not many else [x, x])
            counts.append(2 if many else 1)
        else:
            counts[k] = 2 if many else min(2, counts[k] + 1)
            if len(reps[k]) < 2:
                reps[k].append(x)

    if domain.X is not None:
        for x in domain.X:
            put(footprint(x), x)
        return fps, reps, counts
    # universe not given: the filters' values exactly, plus symbolic records outside every filter
    for v in filters:
        put(footprint(v), v)
    plist = list(partitions.values())
    choices = [list(cells) + [None] for _, cells in plist]  # a cell no release reads, or no cell
    total = math.prod(len(o) for o in choices) if choices else 1
    if total > PRODUCT_LIMIT:
        raise ParameterError("domain", domain, f"a universe X (records outside the filters could fall in "
                             f"{total} cell combinations > {PRODUCT_LIMIT}); pass X to the class")
    op_idx = [j for j, _ in opaque]  # outside records: assume every Opaque may change
    for combo in itertools.product(*choices):
        fp = list(op_idx)
        for (_, cells), c in zip(plist, combo):
            if c is not None:
                fp.extend(cells[c])
        # an unspecified universe has many records with this footprint
        put(array("q", sorted(fp)), _Outside(combo), many=True)
    return fps, reps, counts


def _ordered(releases: list[Release], notion: str) -> FootprintResult:
    """Ordered bounded DP: an edge changes one identifier n; the cells containing n change."""
    from .._core import accounting as _acc

    ncomp = _components(notion)
    n_of: dict[int, tuple[float, float, str]] = {}
    cvals = [0.0] * ncomp
    const, cells = [], []
    for r in releases:
        if isinstance(r.selector, S.Opaque) and r.scope == "local":
            n = r.selector.sensitivity if r.selector.sensitivity is not None else INF
        else:
            n = 1.0  # Prop. A.6: an identifier cell sees at most one changed row; same G or FL
        n_of[r.index] = (n, n, "")
        if isinstance(r.selector, S.OrderCell):
            cells.append(r)
        else:
            const.append(r)
            for c, t in enumerate(terms(r.guarantee, n)):
                cvals[c] += t
    ids: dict[int, list[int]] = {}
    for j, r in enumerate(cells):
        oc: Any = r.selector
        for n in oc.partition.sets[oc.index]:
            ids.setdefault(n, []).append(j)
    groups: dict[tuple[int, ...], int] = {}
    for n, js in sorted(ids.items()):
        groups.setdefault(tuple(sorted(set(js))), n)
    groups.setdefault((), 0)
    fps = list(groups)
    indptr = np.zeros(len(fps) + 1, dtype=np.int64)
    flat: list[int] = []
    for f, fp in enumerate(fps):
        flat.extend(fp)
        indptr[f + 1] = len(flat)
    vals, edges, touched = [], [], []
    for c in range(ncomp):
        t1 = np.asarray([terms(r.guarantee, n_of[r.index][0])[c] for r in cells], dtype=np.float64)
        v, s, _, _, _ = _acc.footprint_max_single(indptr, np.asarray(flat, dtype=np.int64), t1)
        vals.append(v + cvals[c])
        n = groups[fps[s]]
        edges.append(f"change the value of identifier {n}" if n else "change an identifier outside every cell")
        touched.append([r.index for r in const] + [cells[j].index for j in fps[s]])
    n_on = {i: n_of[i][0] for i in touched[0]}
    return FootprintResult(tuple(vals), edges, touched, n_of, n_on, len(fps), len(fps), len(releases))

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "footprint_total": (Ref("guerrabalboa2024", "Thm IV.3"), Ref("guerrabalboa2024", "Thm IV.11"), Ref("guerrabalboa2024", "Thm IV.12"),),
}
