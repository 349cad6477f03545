"""The composition accountant: releases in, the total guarantee for a target granularity out.

The composition accountant for a general granularity (Guerra-Balboa et al. 2024).

``Accountant(granularity, domain=None, notion="pure")`` collects releases
``add(guarantee, selector=Identity(), scope="common")`` and ``total()`` returns the guarantee of
their composition for the target granularity on the class, or ``NO_GUARANTEE``. Adaptive and
independent composition have the same bounds (Sec. V), provided each release's budget and
selector are fixed in advance and its guarantee holds for every prefix of earlier outputs.

Strategy, in order: exact enumeration on a finite class (:mod:`.enumeration`); footprint
closed forms for record-level selectors (:mod:`.footprint`), which cover sequential
composition (Thm IV.3), parallel composition (Thms IV.6 / IV.12), bounded DP over a record
partition (Cor. IV.13, A.18), overlapping selections (Ex. IV.5) and declared-sensitivity
selectors (Prop. III.6). A composition without a finite guarantee returns ``NO_GUARANTEE``;
``result()`` and ``explain()`` give the witness edge.

>>> from puffer import accounting as A
>>> acc = A.Accountant(A.Bounded(), notion="pure")
>>> cells = A.Partition(lambda x: x, cells=["a", "b", "c"])
>>> for c, e in zip("abc", (1.0, 0.5, 0.25)):
...     _ = acc.add(A.PureDP(e), selector=cells[c])
>>> g = acc.total()                   # Cor. IV.13: max_{i != j} (eps_i + eps_j), rounded up
>>> round(g.eps, 12), g.granularity
(1.5, Bounded())
>>> acc2 = A.Accountant(A.Bounded(), notion="pure")
>>> for c, e in zip("abc", (1.0, 0.5, 0.25)):
...     _ = acc2.add(A.PureDP(e), selector=cells[c], scope="local")
>>> acc2.total()                      # Ex. II.9: no finite guarantee
NO_GUARANTEE
"""
from __future__ import annotations

import math
import warnings
from array import array
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..guarantees import Provenance
from ..guarantees._base import round_up
from ..guarantees.dp import GDP, NO_GUARANTEE, RDP, ZCDP, ApproxDP, DPGuarantee, NoGuarantee, PureDP
from ..refs import Ref
from . import databases as DB
from . import granularity as GR
from . import selectors as S
from .pufferfish import as_dp_guarantee
from .releases import Release

__all__ = ["Accountant", "Composition", "DisconnectedClassWarning", "NOTIONS"]

NOTIONS = {"pure": PureDP, "approx": ApproxDP, "zcdp": ZCDP, "gdp": GDP, "rdp": RDP}


#: "auto" enumerates finite classes up to this many databases, then prefers the footprint form
AUTO_ENUMERATION_LIMIT = 2000


class DisconnectedClassWarning(UserWarning):
    """The target class is disconnected under the granularity: guarantees say nothing between
    components (Ex. III.4)."""


@dataclass(frozen=True)
class Composition:
    """The accountant's answer with its justification."""

    guarantee: DPGuarantee | NoGuarantee  # a DP-type guarantee or NO_GUARANTEE
    strategy: str
    theorem: str
    refs: tuple[Ref, ...]
    edge: str                         # the worst edge (witness)
    touched: tuple[int, ...]          # release indices changed on the worst edge
    n_on_edge: dict[int, float] = field(default_factory=dict)   # release index -> n_i on the worst edge
    reason: str = ""
    sequential: float | tuple[float, float] | None = None  # the plain sequential bound, for comparison
    details: dict[str, Any] = field(default_factory=dict)


def _inflate(v: float, n_terms: int) -> float:
    """An upper bound on the exact sum of n_terms non-negative floats whose floating sum is v
    (relative error <= (n - 1) u), plus the few roundings of each term."""
    if not math.isfinite(v) or v == 0.0:
        return v  # a float sum of non-negative terms is 0 only if every term is 0
    return round_up(v * (1.0 + (n_terms + 8) * 2.0 ** -52), 2)


class Accountant:
    """Composition of DP-type releases for one target granularity on one class.

    ``notion``: "pure", "approx", "zcdp" or "gdp"; every release must be of that notion
    (a PureDP is accepted by an "approx" accountant as (eps, 0)); convert others explicitly
    (``PureDP.to_zcdp()``, ...). Pufferfish guarantees are refused (see :func:`add`).

    Adaptive composition (Guerra-Balboa et al. 2024, Thms V.2 and V.5): a release chosen from
    the outputs of earlier ones (its selector, mechanism or budget) composes to the same total as
    the independent case (Thms IV.1 / IV.11; Sec. V: the adaptive bounds are identical), provided
    the guarantee it is added with holds for every prefix of earlier outputs. So the accountant
    needs no flag for adaptivity: add each release with its prefix-uniform guarantee.
    """

    #: the results a total may rest on (the one used is named in the provenance of each total)
    refs = (Ref("guerrabalboa2024", "Thm IV.1"), Ref("guerrabalboa2024", "Thm IV.11"),
            Ref("guerrabalboa2024", "Thm VI.4"), Ref("guerrabalboa2024", "Thm VI.7"),
            Ref("guerrabalboa2024", "Thm VI.13"), Ref("guerrabalboa2024", "Thm VI.14"),
            Ref("guerrabalboa2024", "Thm VI.21"), Ref("guerrabalboa2024", "Thm VI.22"),
            Ref("guerrabalboa2024", "Thm IV.3"), Ref("guerrabalboa2024", "Thm VI.5"),
            Ref("guerrabalboa2024", "Thm VI.15"), Ref("guerrabalboa2024", "Thm VI.23"),
            Ref("guerrabalboa2024", "Thm IV.6"), Ref("guerrabalboa2024", "Thm IV.12"),
            Ref("guerrabalboa2024", "Thm VI.6"), Ref("guerrabalboa2024", "Thm A.13"),
            Ref("guerrabalboa2024", "Thm VI.16"), Ref("guerrabalboa2024", "Thm A.15"),
            Ref("guerrabalboa2024", "Thm VI.26"), Ref("guerrabalboa2024", "Thm A.17"),
            Ref("guerrabalboa2024", "Cor IV.13"), Ref("guerrabalboa2024", "Cor A.18"),
            Ref("guerrabalboa2024", "Thm III.3"), Ref("guerrabalboa2024", "Thm VI.3"),
            Ref("guerrabalboa2024", "Thm VI.12"), Ref("guerrabalboa2024", "Thm VI.20"),
            Ref("guerrabalboa2024", "Thm VII.2"), Ref("guerrabalboa2024", "Thm V.2"),
            Ref("guerrabalboa2024", "Thm V.5"), Ref("guerrabalboa2024", "Thm VI.24"))

    def __init__(self, granularity: Any, domain: Any = None, notion: str = "pure"):
        if not isinstance(granularity, GR.Granularity):
            raise ParameterTypeError("granularity", granularity, "a puffer.accounting granularity "
                                     "(Unbounded(), Bounded(), FreeLunch(), OrderedBounded(), Graph(...))")
        if notion not in NOTIONS:
            raise ParameterError("notion", notion, f"one of {sorted(NOTIONS)}")
        self.granularity = granularity
        self.domain = granularity.check_domain(domain)
        self.notion = notion
        self.releases: list[Release] = []
        self._no: list[tuple[int, str]] = []
        try:
            w = granularity.disconnection_witness(self.domain)
        except ParameterError:
            w = None
        if w is not None:
            warnings.warn(f"{granularity!r} on {self.domain!r} is disconnected: e.g. {w[0]!r} and {w[1]!r} "
                          "are at distance inf, so no guarantee relates them (Guerra-Balboa et al. 2024, "
                          "Ex. III.4)", DisconnectedClassWarning, stacklevel=2)
        self._cache: Composition | None = None
        self._grans: set[GR.Granularity] = set()
        self._partitions: set[int] = set()
        self._kinds: dict[tuple[type[S.Selector], GR.Granularity, str], Release] = {}
        self._p0 = array("d")
        self._p1 = array("d")
        from .footprint import FootprintIndex
        self._index = FootprintIndex(granularity, self.domain, notion) \
            if isinstance(granularity, (GR.Unbounded, GR.Bounded)) and notion != "rdp" else None

    # -- adding releases ----------------------------------------------------------------------
    def add(self, guarantee: Any, selector: Any = None, scope: str = "common", *, label: str | None = None
            ) -> Accountant:
        """Add a release.

        Parameters
        ----------
        guarantee
            A DP-type guarantee of the accountant's notion (``granularity=None`` means the
            target granularity), or an object carrying one (``.dp_guarantee``,
            :class:`~puffer.accounting.Certified`). Pufferfish guarantees (PP, RPP, ...) are
            refused: they have no known sequential composition (Pierquin et al. 2024, App. E.1).
        selector
            What the release reads (default :class:`Identity`).
        scope
            ``"common"``: the guarantee is certified for M_i = M*_i o f_i on the whole class and
            M_i depends on D only through f_i(D) (Thm IV.11); ``"local"``: certified for M*_i on
            f_i(DD) (Thm IV.1).
        label
            A name for the release in explanations (default: its index).
        """
        g: Any = as_dp_guarantee(guarantee)
        index = len(self.releases)
        if isinstance(g, NoGuarantee):
            self._no.append((index, "release has no guarantee"))
            if self.notion == "rdp":
                raise ParameterError("guarantee", g, "an RDP curve (an RDP accountant cannot hold a release "
                                     "without a guarantee)")
            g = NOTIONS[self.notion](*([0.0, 0.0] if self.notion == "approx" else [0.0]))
        g = self._convert(g)
        if selector is None:
            selector = S.Identity()
        if isinstance(selector, (S.Partition, S.OrderPartition)):
            raise ParameterTypeError("selector", selector, "one cell of the partition (p[c]), not the partition")
        if not isinstance(selector, S.Selector):
            raise ParameterTypeError("selector", selector, "a puffer.accounting selector (Identity, RecordFilter, "
                                     "Partition(...)[c], OrderPartition(...)[i], Opaque)")
        if scope not in ("common", "local"):
            raise ParameterError("scope", scope, "'common' or 'local'")
        if selector.reads is not None and selector.reads != self.domain.kind:
            raise ParameterError("selector", selector, f"a selector for {self.domain.kind} databases "
                                 f"(the class is {self.domain!r})")
        G = g.granularity if g.granularity is not None else self.granularity
        if G.applies_to is not None and G.applies_to != self.domain.kind and not isinstance(G, GR.Graph):
            raise ParameterError("guarantee.granularity", G, f"a granularity for {self.domain.kind} databases")
        if g.domain is not None and scope == "common" and g.domain != self.domain:
            raise ParameterError("guarantee.domain", g.domain, f"the accountant's class {self.domain!r} "
                                 "(common scope) or scope='local' for a guarantee on f(DD)")
        g = type(g)(*[getattr(g, p) for p in g._params], granularity=G, domain=g.domain,
                    provenance=g.provenance)
        rel = Release(index, g, selector, scope, label or f"release {index}")
        self.releases.append(rel)
        self._grans.add(G)
        if isinstance(selector, S.PartitionCell):
            self._partitions.add(id(selector.partition))
        self._kinds.setdefault((type(selector), G, scope), rel)
        self._p0.append(getattr(g, g._params[0]) if self.notion != "rdp" else 0.0)
        self._p1.append(g.delta if self.notion == "approx" else 0.0)
        if self._index is not None:
            self._index.add(rel)
        self._cache = None
        return self

    def _convert(self, g: DPGuarantee) -> DPGuarantee:
        if g.notion == self.notion:
            return g
        if self.notion == "approx" and isinstance(g, PureDP):
            return g.to_approx()
        hints = {("pure", "zcdp"): "PureDP.to_zcdp()", ("zcdp", "approx"): "compose as zCDP, then "
                 "total().to_approx(delta)", ("gdp", "approx"): "compose as GDP, then total().to_approx(delta)"}
        hint = hints.get((g.notion, self.notion), "an accountant of the same notion")
        raise ParameterError("guarantee", g, f"a {self.notion!r} guarantee: the paper composes each notion "
                             f"with itself only; convert explicitly ({hint})")

    def __len__(self) -> int:
        return len(self.releases)

    # -- composing ---------------------------------------------------------------------------
    def total(self, strategy: str = "auto") -> DPGuarantee | NoGuarantee:
        """The composed guarantee for the target granularity, or NO_GUARANTEE."""
        return self.result(strategy).guarantee

    def result(self, strategy: str = "auto") -> Composition:
        """The composed guarantee with its strategy, theorem and witness edge. ``strategy``:
        "auto" (enumeration on a finite class, otherwise footprints), "enumerate" or "footprint"."""
        if strategy not in ("auto", "enumerate", "footprint"):
            raise ParameterError("strategy", strategy, "'auto', 'enumerate' or 'footprint'")
        if strategy == "auto" and self._cache is not None:
            return self._cache
        if not self.releases:
            raise ParameterError("releases", 0, "at least one release (add() before total())")
        if self.notion == "rdp":
            comp = self._rdp_result(strategy)
            if strategy == "auto":
                self._cache = comp
            return comp
        from . import enumeration, footprint
        use = strategy
        why_not = footprint.applicable(list(self._kinds.values()), self.granularity, self.domain)
        if use == "auto":
            # Exact enumeration on finite classes. Large fixed-size / ordered classes use the closed
            # form, which is derived for exactly those classes; a size-capped D_X is always
            # enumerated (its capped paths are not what the closed form assumes).
            enum = self.domain.enumerable and (
                why_not is not None or isinstance(self.domain, DB.AllMultisets)
                or DB.class_size(self.domain) <= AUTO_ENUMERATION_LIMIT)
            use = "enumerate" if enum else "footprint"
        if use == "footprint" and why_not is not None:
            if strategy == "footprint" or not self.domain.enumerable:
                raise ParameterError("releases", f"{len(self.releases)} releases", "a composition with a closed "
                                     f"form or a finite class to enumerate ({why_not})")
            use = "enumerate"
        res: Any
        if use == "enumerate":
            res = enumeration.enumerate_total(self.releases, self.granularity, self.domain, self.notion)
            n_terms = len(self.releases)
            edge, touched = res.edges[0], res.touched[0]
            n_on = {r.index: n for r, n in zip(self.releases, res.per_release[0])} if res.per_release[0] else {}
            details: dict[str, Any] = {"edges": res.n_edges, "vertices": res.n_vertices}
            strat = f"exact enumeration ({res.n_vertices} databases, {res.n_edges} edges)"
        else:
            res = footprint.footprint_total(self.releases, self.granularity, self.domain, self.notion,
                                            self._index if (self._index is not None and self._index.ok) else None)
            n_terms = max(res.terms, 1) + 2
            edge, touched = res.edges[0], res.touched[0]
            n_on = dict(res.n_on_edge)
            details = {"footprints": res.n_footprints, "pairs_evaluated": res.pairs_evaluated,
                       "n_notes": res.notes if res.notes is not None else
                       {i: v[2] for i, v in res.n_of.items() if v[2]}}
            strat = f"footprint closed form ({res.n_footprints} footprints)"
        comp = self._finish(res.values, n_terms, strat, edge, tuple(touched), n_on, details, res)
        if strategy == "auto":
            self._cache = comp
        return comp

    def _orders(self) -> tuple[float, ...]:
        gs: list[Any] = [r.guarantee for r in self.releases]
        common = set(gs[0].alphas)
        for g in gs[1:]:
            common &= set(g.alphas)
        if not common:
            raise ParameterError("releases", "RDP curves without a common order", "curves sharing an order")
        return tuple(sorted(common))

    def _rdp_result(self, strategy: str) -> Composition:
        """Per order alpha: max over edges of sum_{i changed} eps_i(alpha) (common domain, same G;
        derived from the edge form of Thm IV.11 with adaptive RDP composition, Mironov 2017 Prop 1).
        A release seeing distance n >= 2 on an edge makes that order infinite (no group form)."""
        from . import enumeration, footprint
        from .releases import RDPOrder
        orders = self._orders()
        vals, edges = [], []
        first = None
        for a in orders:
            rs = [Release(r.index, RDPOrder(_at(r, a), r.G, r.guarantee.domain),  # type: ignore[arg-type]
                          r.selector, r.scope, r.label) for r in self.releases]
            use = strategy
            why_not = footprint.applicable(rs, self.granularity, self.domain)
            if use == "auto":
                use = "enumerate" if self.domain.enumerable or why_not is not None else "footprint"
            res: Any
            if use == "enumerate":
                res = enumeration.enumerate_total(rs, self.granularity, self.domain, "rdp1")
                n_terms = len(rs)
            else:
                if why_not is not None:
                    raise ParameterError("releases", f"{len(rs)} releases", f"a closed form ({why_not})")
                res = footprint.footprint_total(rs, self.granularity, self.domain, "rdp1")
                n_terms = max(res.terms, 1) + 2
            vals.append(_inflate(res.values[0], n_terms))
            edges.append(res.edges[0])
            if first is None:
                first = res
        theorem = ("Renyi DP per order, edge maximum (common domain): Guerra-Balboa et al. 2024, Thm IV.11 "
                   "(edge form), Mironov 2017, Prop 1")
        refs = (Ref("guerrabalboa2024", "Thm IV.11"), Ref("mironov2017", "Prop 1"))
        k = int(np.argmax(vals)) if vals else 0
        edge = f"at alpha = {orders[k]:g}: {edges[k]}"
        touched = tuple(first.touched[0]) if first is not None else ()
        if all(math.isinf(v) for v in vals):
            return Composition(NO_GUARANTEE, "per-order edge maximum", theorem, refs, edge, touched, {},
                               "every order is infinite (a release sees distance >= 2 or inf: no RDP group form)")
        prov = Provenance(mechanism="Accountant", theorem=theorem, refs=refs, witness={"edge": edge},
                          notes=f"{len(self.releases)} releases; {len(orders)} orders")
        g = RDP(orders, tuple(vals), self.granularity, self.domain, prov)
        return Composition(g, "per-order edge maximum", theorem, refs, edge, touched, {}, "", None,
                           {"edges_per_order": dict(zip(orders, edges))})

    def _finish(self, values: tuple[float, ...], n_terms: int, strat: str, edge: str, touched: tuple[int, ...],
                n_on: dict[int, float], details: dict[str, Any], res: Any) -> Composition:
        theorem, refs = self._theorem(strat)
        seq = self._sequential()
        cls = NOTIONS[self.notion]
        reason = ""
        if self._no:
            reason = f"release {self._no[0][0]} carries no guarantee (a composition cannot be better than " \
                     "its parts, Thm VII.2)"
        vals = [_inflate(v, n_terms) for v in values]
        if not reason and any(math.isinf(v) for v in vals):
            notes = details.get("n_notes", {})
            inf_rel = [i for i in touched if math.isinf(n_on.get(i, 0.0))]
            why = "; ".join(f"release {i}: {notes[i]}" for i in inf_rel if i in notes) or \
                "a release sees an infinite distance on this edge (0 * inf = inf)"
            reason = f"no finite guarantee: on the edge {edge}, {why}"
        if not reason and self.notion == "approx" and vals[1] >= 1.0:
            reason = f"vacuous: composed delta = {vals[1]:.6g} >= 1"
        if reason:
            return Composition(NO_GUARANTEE, strat, theorem, refs, edge, touched, n_on, reason, seq, details)
        prov = Provenance(mechanism="Accountant", theorem=theorem, refs=refs,
                          witness={"edge": edge, "releases": list(touched)},
                          notes=f"{len(self.releases)} releases; {strat}")
        if self.notion == "approx":
            g = cls(vals[0], vals[1], self.granularity, self.domain, prov)
        elif self.notion == "gdp":
            g = cls(round_up(math.sqrt(vals[0]), 1) if vals[0] > 0 else 0.0, self.granularity, self.domain, prov)
        else:
            g = cls(vals[0], self.granularity, self.domain, prov)
        return Composition(g, strat, theorem, refs, edge, touched, n_on, "", seq, details)

    def _sequential(self) -> float | tuple[float, float] | None:
        """The plain sequential bound (Thms IV.3, VI.5, VI.15, VI.23), valid when every release is
        certified for the target granularity on the class (common scope); None otherwise."""
        if self._no or self.notion == "rdp" or len(self._grans | {self.granularity}) > 1 \
                or any(k[2] == "local" for k in self._kinds):
            return None
        p0, p1 = np.asarray(self._p0), np.asarray(self._p1)
        if self.notion == "approx":
            return (math.fsum(p0), math.fsum(p1))
        if self.notion == "gdp":
            return math.sqrt(math.fsum(p0 * p0))
        return math.fsum(p0)

    def _theorem(self, strat: str) -> tuple[str, tuple[Ref, ...]]:
        kinds = list(self._kinds)
        local = any(k[2] == "local" for k in kinds)
        types = {k[0] for k in kinds}
        per_notion = {"pure": ("IV.1", "IV.11"), "approx": ("VI.4", "VI.7"), "zcdp": ("VI.13", "VI.14"),
                      "gdp": ("VI.21", "VI.22")}[self.notion]
        seq = {"pure": "IV.3", "approx": "VI.5", "zcdp": "VI.15", "gdp": "VI.23"}[self.notion]
        metric = {"pure": "III.3", "approx": "VI.3", "zcdp": "VI.12", "gdp": "VI.20"}[self.notion]
        cells = self._partitions
        if types == {S.Identity}:
            text, items = "sequential composition", [f"Thm {seq}"]
        elif len(cells) == 1 and types == {S.PartitionCell} and isinstance(self.granularity, GR.Bounded) \
                and local:
            text, items = ("bounded DP over a record-level partition, variable domain (no finite bound: "
                           "Ex. II.9)"), [f"Thm {per_notion[0]}"]
        elif len(cells) == 1 and types == {S.PartitionCell} and isinstance(self.granularity, GR.Bounded):
            cor = "Cor A.18" if self.notion == "gdp" else "Cor IV.13"
            text, items = "bounded DP over a record-level partition (common domain)", [cor]
        elif len(cells) == 1 and types == {S.PartitionCell}:
            bb = {"pure": ("IV.6", "IV.12"), "approx": ("VI.6", "A.13"), "zcdp": ("VI.16", "A.15"),
                  "gdp": ("VI.26", "A.17")}[self.notion]
            text, items = "parallel composition, best bound", [f"Thm {bb[0] if local else bb[1]}"]
        else:
            text, items = ("composition over selectors, " + ("variable domain" if local else "common domain")
                           + " (edge maximum)"), [f"Thm {per_notion[0] if local else per_notion[1]}"]
        items.append(f"Thm {metric}")
        by_item = {r.item: r for r in self.refs}
        refs = tuple(by_item[i] for i in items)
        return f"{text}: Guerra-Balboa et al. 2024, " + ", ".join(items), refs

    # -- metric ---------------------------------------------------------------------------------
    def loss_between(self, D: Any, D2: Any) -> float | tuple[float, ...]:
        """The composed metric between any two databases of the class (Thms IV.1 / IV.11 and
        analogues): pure sum eps_i n_i; approx (sum eps_i n_i, sum delta_i [n_i]_eps_i); zCDP
        sum rho_i n_i^2 (coefficient of alpha); GDP sqrt(sum (mu_i n_i)^2). On a finite class n_i
        is exact (BFS); otherwise closed forms for record-level selectors (common: the fibre
        distance |f(D) xor f(D2)| under U, max(|f D|, |f D2|) - |f D n f D2| under B with padding;
        local: the intrinsic distance in f(DD)), else the declared sensitivity times d^G.
        For GDP releases on the cells of a partition p with the record metric d* (which commutes
        with p) this is Thm VI.24's d~(D, D') = sqrt(sum_i (mu_i d*(p_i D, p_i D'))^2) (Eq. VI.2):
        at most max_i mu_i d*(D, D'), with equality iff at most one cell changes."""
        from .enumeration import release_distance
        from .releases import terms as _terms
        a, b = self.domain.canon(D, "D"), self.domain.canon(D2, "D2")
        if self.notion == "rdp":
            raise ParameterError("notion", "rdp", "pure, approx, zcdp or gdp: RDP has no metric form")
        ncomp = 2 if self.notion == "approx" else 1
        acc = [0.0] * ncomp
        for r in self.releases:
            if self.domain.enumerable:
                n = release_distance(r, self.domain, a, b)
            else:
                n = _closed_release_distance(r, self.granularity, self.domain, a, b)
            for c, t in enumerate(_terms(r.guarantee, n)):
                acc[c] += t
        vals = [_inflate(v, len(self.releases)) for v in acc]
        if self.notion == "gdp":
            return round_up(math.sqrt(vals[0]), 1) if vals[0] > 0 else 0.0
        return tuple(vals) if ncomp == 2 else vals[0]

    # -- explanation ----------------------------------------------------------------------------
    def explain(self) -> str:
        from .explain import explain
        return explain(self)

    def __repr__(self) -> str:
        return (f"Accountant({self.granularity!r}, domain={self.domain!r}, notion={self.notion!r}, "
                f"{len(self.releases)} releases)")


def _at(r: Release, alpha: float) -> float:
    g = cast(RDP, r.guarantee)  # _at is called on RDP releases only
    return g.at(alpha)


def _closed_release_distance(r: Release, target: GR.Granularity, domain: DB.DatabaseClass, D: Any, D2: Any) -> float:
    sel, G = r.selector, r.G
    fa, fb = sel(D), sel(D2)
    if fa == fb:
        return 0.0
    if isinstance(sel, S.Opaque):
        d = target.distance(D, D2, domain)
        if r.scope == "local":
            if sel.sensitivity is None:
                raise ParameterError("selector", sel, "an Opaque selector with a declared sensitivity")
            return math.inf if math.isinf(d) else sel.sensitivity * d
        return G.distance(D, D2, domain)  # fibre distance <= d^{G_i}(D, D2)
    if isinstance(G, GR.FreeLunch):
        return 1.0
    if r.scope == "local":
        img = DB.AllMultisets() if not (isinstance(sel, S.Identity) and isinstance(domain, DB.FixedSize)) else domain
        return G.distance(fa, fb, img)
    # common scope: fibre distance d^{G_i, f_i}
    if isinstance(sel, S.Identity):
        return G.distance(D, D2, domain)
    if isinstance(G, GR.Unbounded):
        return math.inf if isinstance(domain, DB.FixedSize) else float(DB.symdiff_size(fa, fb))
    if isinstance(G, GR.Bounded):
        from .releases import _padding
        if not _padding(sel, domain):
            return G.distance(D, D2, domain)  # no padding known: the plain distance bounds the fibre one
        inter = DB.size(frozenset((x, min(m, dict(fb).get(x, 0))) for x, m in fa if x in dict(fb)))
        return float(max(DB.size(fa), DB.size(fb)) - inter)
    return G.distance(D, D2, domain)
