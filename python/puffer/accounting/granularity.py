"""Granularity notions: neighbour relations on a database class, their path metric and connectedness.

Granularity notions: symmetric neighbour relations on a database class (Guerra-Balboa et al.
2024, Def. III.1), their canonical path metric d^G (Prop. A.1), connectedness (Ex. III.4) and
the conversion factor between two granularities (Sec. III-A, Prop. A.3).

* :class:`Unbounded` (add/remove one record, Def. II.3): ``d^U = |D xor D'|`` on D_X;
  ``+inf`` between distinct databases of one size (the fixed-size class is totally
  disconnected, Ex. III.4).
* :class:`Bounded` (replace one record, Def. II.4): ``d^B = |D xor D'| / 2`` for equal sizes,
  else ``+inf`` (proof of Lemma A.8).
* :class:`FreeLunch`: every distinct pair is neighbouring, ``d = 1``.
* :class:`OrderedBounded` (Ex. IV.7): change the value of one identifier; Hamming distance.
* :class:`Graph`: a user relation, given by ``edges=`` or a ``neighbors=`` function, on a
  finite class; distances by breadth-first search in the C++ core.

``G1.dist_to(G2, domain)`` is ``dist_DD(G1, G2) = max over G2-edges of d^{G1}``: a mechanism
that is G1 eps-DP is G2 (k eps)-DP with k this factor. The *first* granularity is the one the
mechanism is certified for.

>>> Unbounded().dist_to(Bounded())   # unbounded eps-DP => bounded 2 eps-DP
2.0
>>> Bounded().dist_to(Unbounded())   # bounded does not imply unbounded
inf
>>> Unbounded().distance(["a", "b"], ["b", "c", "c"])
3.0
>>> Bounded().distance(["a", "b"], ["b", "c"])
1.0
"""
from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import NumericalError, ParameterError, ParameterTypeError
from . import databases as DB

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import NDArray

__all__ = ["Granularity", "Unbounded", "Bounded", "FreeLunch", "OrderedBounded", "Graph",
           "granularity_from_dict", "ENUMERATED"]

INF = math.inf


def _core() -> ModuleType:
    from .. import _core
    return _core.accounting


class Granularity(abc.ABC):
    """A symmetric neighbour relation ``~_G`` on a database class."""

    #: the class kind this relation applies to ("multiset", "ordered" or None for any)
    applies_to: str | None = "multiset"
    name: str = ""

    # -- relation ---------------------------------------------------------------------------
    @abc.abstractmethod
    def _adjacent(self, D: Any, D2: Any) -> bool:
        """The relation on canonical databases (D != D2)."""

    def default_domain(self) -> DB.DatabaseClass:
        return DB.AllMultisets()

    def check_domain(self, domain: Any) -> DB.DatabaseClass:
        if domain is None:
            return self.default_domain()
        if not isinstance(domain, DB.DatabaseClass):
            raise ParameterTypeError("domain", domain, "a puffer.accounting database class "
                                     "(AllMultisets, FixedSize, Ordered, Finite, Image)")
        if self.applies_to is not None and domain.kind != self.applies_to and domain.kind != "opaque":
            raise ParameterError("domain", domain, f"a class of {self.applies_to} databases for {self!r}")
        return domain

    def is_neighbor(self, D: Any, D2: Any, domain: Any = None) -> bool:
        """True iff D ~_G D2 and both are in the class (D != D2)."""
        domain = self.check_domain(domain)
        a, b = domain.canon(D, "D"), domain.canon(D2, "D2")
        return a != b and self._adjacent(a, b)

    def neighbors(self, D: Any, domain: Any = None) -> Iterator[Any]:
        """The G-neighbours of D inside the class (generated, or scanned on finite classes)."""
        domain = self.check_domain(domain)
        a = domain.canon(D)
        gen = self._generate(a, domain)
        if gen is not None:
            yield from gen
            return
        if not domain.enumerable:
            raise ParameterError("domain", domain, f"a finite class to list the neighbours of {self!r}")
        for b in domain.enumerate():
            if b != a and self._adjacent(a, b):
                yield b

    def _generate(self, D: Any, domain: DB.DatabaseClass) -> Iterator[Any] | None:
        return None

    def _generate_or_scan(self, v: Any, domain: DB.DatabaseClass, verts: list[Any]) -> list[Any]:
        gen = self._generate(v, domain)
        if gen is not None:
            return list(gen)
        return [w for w in verts if w != v and self._adjacent(v, w)]

    # -- metric -------------------------------------------------------------------------------
    def _closed_distance(self, D: Any, D2: Any, domain: DB.DatabaseClass) -> float | None:
        return None

    def distance(self, D: Any, D2: Any, domain: Any = None, *, cap: int | None = None) -> float:
        """The canonical path metric d^G_DD(D, D2) (Prop. A.1): fewest G-edges on a path that
        stays inside the class; ``inf`` if there is none. Closed form where known, otherwise
        breadth-first search on the enumerated class (``cap`` bounds the search depth: if it is
        reached a NumericalError is raised rather than a guessed distance)."""
        domain = self.check_domain(domain)
        a, b = domain.canon(D, "D"), domain.canon(D2, "D2")
        if a == b:
            return 0.0
        closed = self._closed_distance(a, b, domain)
        if closed is not None:
            return float(closed)
        return _bfs_distance(self, domain, [a], [b], cap)

    def fiber_distance(self, sources: Iterable[Any], targets: Iterable[Any], domain: Any = None) -> float:
        """min d^G over source x target (multi-source BFS; Prop. IV.10's d^f)."""
        domain = self.check_domain(domain)
        return _bfs_distance(self, domain, [domain.canon(s) for s in sources],
                             [domain.canon(t) for t in targets], None)

    def is_connected(self, domain: Any = None) -> bool:
        """True iff d^G_DD < inf for every pair of the class (Sec. III)."""
        return self.disconnection_witness(domain) is None

    def disconnection_witness(self, domain: Any = None) -> tuple[Any, Any] | None:
        """A pair (D, D2) at distance inf, or None if the class is connected."""
        domain = self.check_domain(domain)
        w = self._closed_witness(domain)
        if w is not False:
            return w
        if not domain.enumerable:
            raise ParameterError("domain", domain, f"a finite class to decide connectedness of {self!r}")
        g = enumerated(self, domain)
        if g.n == 0:
            return None
        dist = _core().bfs_multi(g.indptr, g.indices, np.array([0], dtype=np.int64), -1)
        miss = np.flatnonzero(dist < 0)
        return None if miss.size == 0 else (g.vertices[0], g.vertices[int(miss[0])])

    def _closed_witness(self, domain: DB.DatabaseClass) -> tuple[Any, Any] | Literal[False] | None:
        """Closed-form answer: a witness pair, None (connected) or False (unknown)."""
        return False

    def dist_to(self, other: Granularity, domain: Any = None) -> float:
        """dist_DD(self, other) = max over other-edges of d^self (Prop. A.3): self eps-DP
        implies other (k eps)-DP with k this value (inf: no implication). The default class is
        D_X (all finite multisets) for multiset granularities, where dist(U, B) = 2."""
        if not isinstance(other, Granularity):
            raise ParameterTypeError("other", other, "a Granularity")
        if domain is None and self.applies_to in ("multiset", None) and other.applies_to in ("multiset", None) \
                and not isinstance(other, Graph) and not isinstance(self, Graph):
            domain = DB.AllMultisets()
        domain = other.check_domain(domain)
        self.check_domain(domain)
        if self == other:
            return 1.0
        closed = _closed_dist_to(self, other, domain)
        if closed is not None:
            return closed
        if not domain.enumerable:
            raise ParameterError("domain", domain, f"a finite class to compute dist({self!r}, {other!r})")
        g_self, g_other = enumerated(self, domain), enumerated(other, domain)
        worst = 0.0
        for v in range(g_other.n):
            nb = g_other.indices[g_other.indptr[v]:g_other.indptr[v + 1]]
            if nb.size == 0:
                continue
            dist = _core().bfs_multi(g_self.indptr, g_self.indices, np.array([v], dtype=np.int64), -1)
            d = dist[nb]
            if (d < 0).any():
                return INF
            worst = max(worst, float(d.max()))
        return worst

    # -- misc ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"kind": type(self).__name__}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@dataclass(frozen=True, repr=False)
class Unbounded(Granularity):
    """Unbounded (add/remove) DP: D ~ D' iff |D xor D'| = 1 (Def. II.3)."""

    def _adjacent(self, D: Any, D2: Any) -> bool:
        return DB.symdiff_size(D, D2) == 1

    def _generate(self, D: Any, domain: DB.DatabaseClass) -> Iterator[Any] | None:
        if isinstance(domain, DB.AllMultisets) and domain.X is not None:
            out = [DB.remove_record(D, x) for x, _ in D]
            if domain.max_size is None or DB.size(D) < domain.max_size:
                out += [DB.add_record(D, x) for x in domain.X]
            return iter(out)
        if isinstance(domain, DB.FixedSize):
            return iter(())
        return None

    def _closed_distance(self, D: Any, D2: Any, domain: DB.DatabaseClass) -> float | None:
        if isinstance(domain, DB.AllMultisets):
            return DB.symdiff_size(D, D2)
        if isinstance(domain, DB.FixedSize):
            return INF
        return None

    def _closed_witness(self, domain: DB.DatabaseClass) -> tuple[Any, Any] | Literal[False] | None:
        if isinstance(domain, DB.AllMultisets):
            return None
        if isinstance(domain, DB.FixedSize):
            if domain.X is not None and (len(domain.X) < 2 or domain.N == 0):
                return None
            x, y = (domain.X[0], domain.X[1]) if domain.X is not None else ("x", "y")
            n = domain.N if domain.N is not None else 1
            return (DB.multiset([x] * n), DB.multiset([x] * (n - 1) + [y]))
        return False


@dataclass(frozen=True, repr=False)
class Bounded(Granularity):
    """Bounded (replace-one) DP: |D xor D'| = 2 and |D| = |D'| (Def. II.4). Default class:
    the multisets of one (unspecified) size."""

    def default_domain(self) -> DB.DatabaseClass:
        return DB.FixedSize()

    def _adjacent(self, D: Any, D2: Any) -> bool:
        return DB.size(D) == DB.size(D2) and DB.symdiff_size(D, D2) == 2

    def _generate(self, D: Any, domain: DB.DatabaseClass) -> Iterator[Any] | None:
        if isinstance(domain, (DB.AllMultisets, DB.FixedSize)) and domain.X is not None:
            out = []
            for x, _ in D:
                less = DB.remove_record(D, x)
                out += [DB.add_record(less, y) for y in domain.X if y != x]
            return iter(out)
        return None

    def _closed_distance(self, D: Any, D2: Any, domain: DB.DatabaseClass) -> float | None:
        if isinstance(domain, (DB.AllMultisets, DB.FixedSize)):
            return DB.symdiff_size(D, D2) / 2 if DB.size(D) == DB.size(D2) else INF
        return None

    def _closed_witness(self, domain: DB.DatabaseClass) -> tuple[Any, Any] | Literal[False] | None:
        if isinstance(domain, DB.FixedSize):
            return None
        if isinstance(domain, DB.AllMultisets):
            if domain.max_size == 0:
                return None
            x = domain.X[0] if domain.X is not None else "x"
            return (DB.multiset([]), DB.multiset([x]))
        return False


@dataclass(frozen=True, repr=False)
class FreeLunch(Granularity):
    """Free-lunch privacy: every distinct pair is neighbouring (d = 1); implies every other
    granularity's DP on the same class."""

    applies_to = None

    def _adjacent(self, D: Any, D2: Any) -> bool:
        return True

    def _closed_distance(self, D: Any, D2: Any, domain: DB.DatabaseClass) -> float | None:
        return 1.0

    def _closed_witness(self, domain: DB.DatabaseClass) -> tuple[Any, Any] | Literal[False] | None:
        return None


@dataclass(frozen=True, repr=False)
class OrderedBounded(Granularity):
    """Bounded DP on ordered tables (Ex. IV.7): change the value of exactly one identifier."""

    applies_to = "ordered"

    def default_domain(self) -> DB.DatabaseClass:
        return DB.Ordered()

    def _adjacent(self, D: Any, D2: Any) -> bool:
        return len(D) == len(D2) and sum(a != b for a, b in zip(D, D2)) == 1

    def _generate(self, D: Any, domain: DB.DatabaseClass) -> Iterator[Any] | None:
        if isinstance(domain, DB.Ordered) and domain.X is not None:
            return iter([D[:n] + (y,) + D[n + 1:] for n in range(len(D)) for y in domain.X if y != D[n]])
        return None

    def _closed_distance(self, D: Any, D2: Any, domain: DB.DatabaseClass) -> float | None:
        if isinstance(domain, DB.Ordered):
            return float(sum(a != b for a, b in zip(D, D2))) if len(D) == len(D2) else INF
        return None

    def _closed_witness(self, domain: DB.DatabaseClass) -> tuple[Any, Any] | Literal[False] | None:
        if isinstance(domain, DB.Ordered):
            return None
        return False


class Graph(Granularity):
    """A user-defined granularity on a finite class: ``edges=[(D, D2), ...]`` (undirected) or
    ``neighbors=fn`` (fn(D) -> iterable of neighbours; must be symmetric). Databases are used as
    given (hashable), so ``domain`` defaults to the vertices of ``edges``.

    >>> g = Graph(edges=[("a", "b"), ("b", "c")])
    >>> g.distance("a", "c"), g.is_connected()
    (2.0, True)
    """

    applies_to = None

    def __init__(self, neighbors: Callable[[Any], Iterable[Any]] | None = None, *, edges: Any = None,
                 domain: Any = None) -> None:
        if (neighbors is None) == (edges is None):
            raise ParameterError("neighbors/edges", (neighbors, edges), "exactly one of neighbors= and edges=")
        self.neighbors_fn: Callable[[Any], Iterable[Any]] | None = None
        self.edges: tuple[tuple[Any, ...], ...] | None = None
        self._adj: dict[Any, set[Any]] | None = None
        if edges is not None:
            try:
                pairs = [tuple(e) for e in edges]
            except TypeError:
                raise ParameterTypeError("edges", edges, "an iterable of (D, D2) pairs") from None
            adj: dict[Any, set[Any]] = {}
            for i, p in enumerate(pairs):
                if len(p) != 2:
                    raise ParameterError(f"edges[{i}]", p, "a pair (D, D2)")
                a, b = p
                if a == b:
                    raise ParameterError(f"edges[{i}]", p, "two distinct databases (a self-loop is not a "
                                         "neighbourhood: d(D, D) = 0 by definition)")
                adj.setdefault(a, set()).add(b)
                adj.setdefault(b, set()).add(a)
            self.edges = tuple(pairs)
            self._adj = adj
            if domain is None:
                domain = DB.Finite(list(adj), kind="opaque")
        else:
            if not callable(neighbors):
                raise ParameterTypeError("neighbors", neighbors, "a callable D -> iterable of neighbours")
            self.neighbors_fn = neighbors
            self._adj = None
            if domain is None:
                raise ParameterError("domain", None, "a finite class (Finite([...])) for neighbors=")
        if not isinstance(domain, DB.DatabaseClass) or not domain.enumerable:
            raise ParameterError("domain", domain, "a finite (enumerable) database class")
        self.domain = domain
        if self.neighbors_fn is not None:
            self._check_symmetric()

    def _nbrs(self, D: Any) -> set[Any]:
        if self._adj is not None:
            return self._adj.get(D, set())
        fn: Any = self.neighbors_fn
        try:
            out = set(fn(D))
        except TypeError as exc:
            raise ParameterTypeError("neighbors", self.neighbors_fn,
                                     f"fn(D) -> iterable of hashable databases ({exc})") from None
        if D in out:
            raise ParameterError("neighbors", f"{D!r} listed as its own neighbour",
                                 "a relation without self-loops")
        return out

    def _check_symmetric(self) -> None:
        verts = self.domain.enumerate()
        nb = {v: self._nbrs(v) for v in verts}
        for v in verts:
            for w in nb[v]:
                if w in nb and v not in nb[w]:
                    raise ParameterError("neighbors", f"{w!r} in neighbors({v!r}) but {v!r} not in neighbors({w!r})",
                                         "a symmetric relation (Def. III.1)")

    def default_domain(self) -> DB.DatabaseClass:
        return self.domain

    def _adjacent(self, D: Any, D2: Any) -> bool:
        return D2 in self._nbrs(D)

    def _generate(self, D: Any, domain: DB.DatabaseClass) -> Iterator[Any] | None:
        members = set(domain.enumerate())
        return iter([w for w in self._nbrs(D) if w in members])

    def to_dict(self) -> dict[str, Any]:
        raise ParameterError("granularity", self, "a built-in granularity (a user Graph is not serialised)")

    def __repr__(self) -> str:
        if self.edges is not None:
            return f"Graph({len(self.edges)} edges)"
        return f"Graph(neighbors={getattr(self.neighbors_fn, '__name__', 'fn')})"

    def __hash__(self) -> int:
        return id(self)


def _closed_dist_to(g1: Granularity, g2: Granularity, domain: DB.DatabaseClass) -> float | None:
    """Closed forms of dist_DD(g1, g2) on the standard classes (Sec. III-A)."""
    std = (Unbounded, Bounded, FreeLunch, OrderedBounded)
    if not (isinstance(g1, std) and isinstance(g2, std)):
        return None
    if isinstance(g1, FreeLunch):
        return 1.0
    if isinstance(domain, DB.AllMultisets) and domain.X is None:
        if isinstance(g2, FreeLunch):
            return INF  # FL-neighbours can be arbitrarily far apart (or disconnected) under U/B
        if isinstance(g1, Unbounded) and isinstance(g2, Bounded):
            return 2.0
        if isinstance(g1, Bounded) and isinstance(g2, Unbounded):
            return INF
    if isinstance(domain, DB.FixedSize) and domain.X is None:
        if isinstance(g1, Unbounded) and isinstance(g2, Bounded):
            return INF if domain.N != 0 else 0.0
        if isinstance(g2, FreeLunch):
            return INF if domain.N != 0 else 0.0
        if isinstance(g2, Unbounded):
            return 0.0  # no unbounded edges inside one size class
    return None


@dataclass(frozen=True)
class EnumeratedGraph:
    """The neighbour graph of a granularity on a finite class, in compressed sparse row form."""

    vertices: list[Any]
    index: dict[Any, int]
    indptr: NDArray[np.int64]
    indices: NDArray[np.int64]

    @property
    def n(self) -> int:
        return len(self.vertices)


@functools.lru_cache(maxsize=64)
def _enumerated_cached(g: Granularity, domain: DB.DatabaseClass) -> EnumeratedGraph:
    verts = domain.enumerate()
    index = {v: i for i, v in enumerate(verts)}
    indptr = [0]
    indices: list[int] = []
    for v in verts:
        nb = sorted({index[w] for w in g._generate_or_scan(v, domain, verts) if w in index})
        indices.extend(nb)
        indptr.append(len(indices))
    return EnumeratedGraph(verts, index, np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64))


def enumerated(g: Granularity, domain: DB.DatabaseClass) -> EnumeratedGraph:
    """The G-graph restricted to an enumerable class, as CSR (cached)."""
    try:
        return _enumerated_cached(g, domain)
    except TypeError:  # unhashable domain
        return _enumerated_cached.__wrapped__(g, domain)


ENUMERATED = enumerated


def _bfs_distance(g: Granularity, domain: DB.DatabaseClass, sources: list[Any], targets: list[Any],
                  cap: int | None) -> float:
    if not domain.enumerable:
        raise ParameterError("domain", domain, f"a finite class for a breadth-first search under {g!r} "
                             "(no closed form for this class)")
    eg = enumerated(g, domain)
    src = np.array([eg.index[s] for s in sources], dtype=np.int64)
    dist = _core().bfs_multi(eg.indptr, eg.indices, src, -1 if cap is None else int(cap))
    d = [int(dist[eg.index[t]]) for t in targets]
    reached = [x for x in d if x >= 0]
    if reached:
        return float(min(reached))
    if cap is not None:
        raise NumericalError(f"breadth-first search under {g!r} reached its cap of {cap} steps "
                             "without meeting the target; raise cap= (no distance is guessed)")
    return INF


def granularity_from_dict(d: Any) -> Granularity:
    """The granularity a file names (``{'kind': 'Bounded'}`` or ``'Bounded'``)."""
    kinds: dict[str, type[Granularity]] = {"Unbounded": Unbounded, "Bounded": Bounded, "FreeLunch": FreeLunch,
             "OrderedBounded": OrderedBounded}
    if isinstance(d, str):
        d = {"kind": d}
    if not isinstance(d, dict) or d.get("kind") not in kinds or len(d) != 1:
        raise ParameterError("granularity", d, f"{{'kind': one of {sorted(kinds)}}}")
    return kinds[d["kind"]]()

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "Bounded": (Ref("guerrabalboa2024", "Lemma A.8"),),
    "OrderedBounded": (Ref("guerrabalboa2024", "Ex. IV.7"),),
}
