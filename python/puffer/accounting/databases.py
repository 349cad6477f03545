"""Database classes (data domains) and the multiset algebra the accountant works on.

Database classes (data domains) and the multiset algebra (Guerra-Balboa et al. 2024, Sec. II
and the proof of Prop. A.4).

A multiset database is stored canonically as a ``frozenset`` of ``(record, multiplicity)``
pairs (hashable, order-free); :func:`multiset` converts a list, tuple, ``Counter`` or dict.
An ordered database (Ex. IV.7) is a tuple of values: identifier ``n`` (1-based) holds
``D[n - 1]``.

A granularity is always tied to a class: the same relation on a different class is a
different graph (Remark A.2). Classes:

* :class:`AllMultisets` — all finite multisets over ``X`` (``D_X``), optionally of size
  ``<= max_size`` (then, with ``X`` given, finite and enumerable).
* :class:`FixedSize` — the multisets of one size ``N`` (``DD_N``; ``N=None``: one size, not
  specified). The default class of bounded DP.
* :class:`Ordered` — ordered tables with unique identifiers ``1..N`` (``D_X^ord``).
* :class:`Finite` — an explicit enumeration (test oracle, user graphs).
* :class:`Image` — ``f(DD)``, the class a selector maps into.

>>> multiset(["a", "b", "a"]) == multiset({"a": 2, "b": 1})
True
>>> size(multiset(["a", "b", "a"])), symdiff_size(multiset("ab"), multiset("bc"))
(3, 2)
>>> len(AllMultisets("abc", max_size=2).enumerate())
10
"""
from __future__ import annotations

import abc
import itertools
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from ..errors import ParameterError, ParameterTypeError

__all__ = ["multiset", "size", "symdiff_size", "restrict", "add_record", "remove_record",
           "DatabaseClass", "AllMultisets", "FixedSize", "Ordered", "Finite", "Image",
           "ENUMERATION_LIMIT"]

#: the largest class enumerated for BFS (vertices); beyond it puffer refuses rather than hang
ENUMERATION_LIMIT = 200_000

Multiset = frozenset
#: the canonical multiset type, (record, multiplicity >= 1) pairs
MultisetT: TypeAlias = "frozenset[tuple[Hashable, int]]"


def multiset(D: Any, name: str = "D") -> MultisetT:
    """Canonical multiset: a frozenset of (record, multiplicity >= 1) pairs."""
    if isinstance(D, frozenset):
        items = list(D)
        if all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[1], int) and p[1] >= 1
               for p in items):
            return D
        raise ParameterError(name, D, "a canonical multiset (frozenset of (record, count >= 1)) "
                             "or a list/tuple/dict/Counter of records")
    if isinstance(D, dict):
        c: Counter[Hashable] = Counter()
        for x, m in D.items():
            if isinstance(m, bool) or not isinstance(m, int) or m < 0:
                raise ParameterError(f"{name}[{x!r}]", m, "a multiplicity: an integer >= 0")
            if m:
                c[x] = m
    else:
        try:
            c = Counter(D)
        except TypeError as exc:
            raise ParameterTypeError(name, D, f"an iterable of hashable records ({exc})") from None
    return frozenset(c.items())


def size(D: MultisetT) -> int:
    """|D| = sum of multiplicities."""
    return sum(m for _, m in D)


def symdiff_size(D: MultisetT, D2: MultisetT) -> int:
    """|D xor D2| = sum_x |m_D(x) - m_D2(x)|."""
    a, b = dict(D), dict(D2)
    return sum(abs(a.get(x, 0) - b.get(x, 0)) for x in set(a) | set(b))


def restrict(D: MultisetT, keep: Callable[[Any], bool]) -> MultisetT:
    """The sub-multiset of records x with keep(x) (record-level selector, Ex. IV.4)."""
    return frozenset((x, m) for x, m in D if keep(x))


def add_record(D: MultisetT, x: Hashable) -> MultisetT:
    """The multiset ``D`` with one more copy of record ``x``."""
    c = dict(D)
    c[x] = c.get(x, 0) + 1
    return frozenset(c.items())


def remove_record(D: MultisetT, x: Hashable) -> MultisetT:
    """The multiset ``D`` with one copy of record ``x`` removed (refused if ``x`` is absent)."""
    c = dict(D)
    if c.get(x, 0) == 0:
        raise ParameterError("x", x, "a record present in the database")
    c[x] -= 1
    if c[x] == 0:
        del c[x]
    return frozenset(c.items())


def _universe(X: Any) -> tuple[Hashable, ...] | None:
    if X is None:
        return None
    if isinstance(X, (str, bytes)):
        X = list(X)
    try:
        vals = list(dict.fromkeys(X))
    except TypeError as exc:
        raise ParameterTypeError("X", X, f"an iterable of hashable records ({exc})") from None
    if not vals:
        raise ParameterError("X", X, "a non-empty record universe")
    return tuple(vals)


class DatabaseClass(abc.ABC):
    """A class of databases. ``kind`` is ``"multiset"``, ``"ordered"`` or ``"opaque"``."""

    kind: str = "multiset"
    X: tuple[Hashable, ...] | None = None

    @abc.abstractmethod
    def canon(self, D: Any, name: str = "D") -> Any:
        """D in canonical form; a ParameterError if D is not in the class."""

    def contains(self, D: Any) -> bool:
        try:
            self.canon(D)
        except (ParameterError, ParameterTypeError):
            return False
        return True

    @property
    def enumerable(self) -> bool:
        return False

    def enumerate(self) -> list[Any]:
        raise ParameterError("domain", self, "a finite class (give X and a size bound, or use Finite)")

    def to_dict(self) -> dict[str, Any]:
        raise ParameterError("domain", self, "a class that can be serialised (not Finite/Image)")

    def _check_records(self, D: MultisetT, name: str) -> MultisetT:
        if self.X is not None:
            allowed = set(self.X)
            for x, _ in D:
                if x not in allowed:
                    raise ParameterError(name, x, f"records from the universe X = {list(self.X)}")
        return D


@dataclass(frozen=True)
class AllMultisets(DatabaseClass):
    """All finite multisets over X (``D_X``); ``max_size`` bounds |D| (finite if X is given).

    ``X=None`` leaves the universe unspecified (arbitrary, possibly infinite).
    """

    X: Any = None
    max_size: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "X", _universe(self.X))
        if self.max_size is not None and (isinstance(self.max_size, bool) or not isinstance(self.max_size, int)
                                          or self.max_size < 0):
            raise ParameterError("max_size", self.max_size, "None or an integer >= 0")

    def canon(self, D: Any, name: str = "D") -> MultisetT:
        ms = self._check_records(multiset(D, name), name)
        if self.max_size is not None and size(ms) > self.max_size:
            raise ParameterError(name, size(ms), f"a database of size <= max_size = {self.max_size}")
        return ms

    @property
    def enumerable(self) -> bool:
        return self.X is not None and self.max_size is not None

    def enumerate(self) -> list[Any]:
        X, top = self.X, self.max_size
        if X is None or top is None:
            return super().enumerate()
        n = sum(math.comb(len(X) + s - 1, s) for s in range(top + 1))
        if n > ENUMERATION_LIMIT:
            raise ParameterError("domain", self, f"at most {ENUMERATION_LIMIT} databases to enumerate (has {n})")
        out: list[MultisetT] = []
        for s in range(top + 1):
            out.extend(multiset(c) for c in itertools.combinations_with_replacement(self.X, s))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "AllMultisets", "X": None if self.X is None else list(self.X), "max_size": self.max_size}

    def __repr__(self) -> str:
        return f"AllMultisets(X={self.X!r}, max_size={self.max_size!r})"


@dataclass(frozen=True)
class FixedSize(DatabaseClass):
    """The multisets of size exactly N (``DD_N``); ``N=None``: one size, not specified."""

    X: Any = None
    N: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "X", _universe(self.X))
        if self.N is not None and (isinstance(self.N, bool) or not isinstance(self.N, int) or self.N < 0):
            raise ParameterError("N", self.N, "None or an integer >= 0")

    def canon(self, D: Any, name: str = "D") -> MultisetT:
        ms = self._check_records(multiset(D, name), name)
        if self.N is not None and size(ms) != self.N:
            raise ParameterError(name, size(ms), f"a database of size N = {self.N}")
        return ms

    @property
    def enumerable(self) -> bool:
        return self.X is not None and self.N is not None

    def enumerate(self) -> list[Any]:
        X, N = self.X, self.N
        if X is None or N is None:
            return super().enumerate()
        n = math.comb(len(X) + N - 1, N)
        if n > ENUMERATION_LIMIT:
            raise ParameterError("domain", self, f"at most {ENUMERATION_LIMIT} databases to enumerate (has {n})")
        return [multiset(c) for c in itertools.combinations_with_replacement(X, N)]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "FixedSize", "X": None if self.X is None else list(self.X), "N": self.N}

    def __repr__(self) -> str:
        return f"FixedSize(X={self.X!r}, N={self.N!r})"


@dataclass(frozen=True)
class Ordered(DatabaseClass):
    """Ordered tables with identifiers 1..N (Ex. IV.7): a tuple of N values from X.
    ``N=None``: one length, not specified."""

    X: Any = None
    N: int | None = None
    kind: str = field(default="ordered", init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "X", _universe(self.X))
        if self.N is not None and (isinstance(self.N, bool) or not isinstance(self.N, int) or self.N < 0):
            raise ParameterError("N", self.N, "None or an integer >= 0")

    def canon(self, D: Any, name: str = "D") -> tuple[Any, ...]:
        if isinstance(D, (str, bytes, dict, set, frozenset)) or not isinstance(D, Iterable):
            raise ParameterTypeError(name, D, "an ordered table: a tuple/list of values, identifier n -> D[n-1]")
        t = tuple(D)
        if self.N is not None and len(t) != self.N:
            raise ParameterError(name, len(t), f"a table with N = {self.N} identifiers")
        if self.X is not None:
            allowed = set(self.X)
            for x in t:
                if x not in allowed:
                    raise ParameterError(name, x, f"values from the universe X = {list(self.X)}")
        return t

    @property
    def enumerable(self) -> bool:
        return self.X is not None and self.N is not None

    def enumerate(self) -> list[Any]:
        X, N = self.X, self.N
        if X is None or N is None:
            return super().enumerate()
        n = len(X) ** N
        if n > ENUMERATION_LIMIT:
            raise ParameterError("domain", self, f"at most {ENUMERATION_LIMIT} databases to enumerate (has {n})")
        return [tuple(t) for t in itertools.product(X, repeat=N)]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "Ordered", "X": None if self.X is None else list(self.X), "N": self.N}

    def __repr__(self) -> str:
        return f"Ordered(X={self.X!r}, N={self.N!r})"


@dataclass(frozen=True, eq=False)
class Finite(DatabaseClass):
    """An explicit, finite class. ``kind="multiset"`` canonicalises each element with
    :func:`multiset`; ``"ordered"`` makes tuples; ``"opaque"`` keeps hashable items as given."""

    databases: Any = ()
    kind: str = "multiset"
    _set: frozenset[Any] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in ("multiset", "ordered", "opaque"):
            raise ParameterError("kind", self.kind, "'multiset', 'ordered' or 'opaque'")
        try:
            items = list(self.databases)
        except TypeError:
            raise ParameterTypeError("databases", self.databases, "an iterable of databases") from None
        if not items:
            raise ParameterError("databases", self.databases, "a non-empty class")
        if len(items) > ENUMERATION_LIMIT:
            raise ParameterError("databases", f"{len(items)} databases", f"at most {ENUMERATION_LIMIT}")
        canon = [self._canon1(d, f"databases[{i}]") for i, d in enumerate(items)]
        object.__setattr__(self, "databases", tuple(dict.fromkeys(canon)))
        object.__setattr__(self, "_set", frozenset(self.databases))

    def _canon1(self, D: Any, name: str) -> Any:
        if self.kind == "multiset":
            return multiset(D, name)
        if self.kind == "ordered":
            return tuple(D)
        try:
            hash(D)
        except TypeError:
            raise ParameterTypeError(name, D, "a hashable database") from None
        return D

    def canon(self, D: Any, name: str = "D") -> Any:
        c = self._canon1(D, name)
        if c not in self._set:
            raise ParameterError(name, D, f"a database of this Finite class ({len(self.databases)} elements)")
        return c

    @property
    def enumerable(self) -> bool:
        return True

    def enumerate(self) -> list[Any]:
        return list(self.databases)

    def __repr__(self) -> str:
        return f"Finite({len(self.databases)} {self.kind} databases)"


@dataclass(frozen=True, eq=False)
class Image(DatabaseClass):
    """The class f(DD) (the domain DD_i of a selector f_i; Sec. IV). Enumerable when DD is."""

    f: Callable[[Any], Any]
    domain: DatabaseClass
    kind: str = "multiset"

    def __post_init__(self) -> None:
        if not callable(self.f):
            raise ParameterTypeError("f", self.f, "a callable database -> database")
        if not isinstance(self.domain, DatabaseClass):
            raise ParameterTypeError("domain", self.domain, "a puffer.accounting database class")

    @property
    def enumerable(self) -> bool:
        return self.domain.enumerable

    def enumerate(self) -> list[Any]:
        return list(dict.fromkeys(self.f(D) for D in self.domain.enumerate()))

    def canon(self, D: Any, name: str = "D") -> Any:
        c = multiset(D, name) if self.kind == "multiset" else D
        if self.enumerable and c not in set(self.enumerate()):
            raise ParameterError(name, D, "a database in the image f(DD)")
        return c

    def __repr__(self) -> str:
        return f"Image({getattr(self.f, '__name__', 'f')}, {self.domain!r})"


def class_size(domain: DatabaseClass) -> int:
    """Number of databases of a finite class (without enumerating the large ones)."""
    if isinstance(domain, AllMultisets) and domain.X is not None and domain.max_size is not None:
        return sum(math.comb(len(domain.X) + s - 1, s) for s in range(domain.max_size + 1))
    if isinstance(domain, FixedSize) and domain.X is not None and domain.N is not None:
        return math.comb(len(domain.X) + domain.N - 1, domain.N)
    if isinstance(domain, Ordered) and domain.X is not None and domain.N is not None:
        return cast(int, len(domain.X) ** domain.N)  # int ** int >= 0 is an int; typeshed says Any
    return len(domain.enumerate())


def domain_from_dict(d: Any) -> DatabaseClass:
    """Inverse of ``to_dict`` for the serialisable classes."""
    if not isinstance(d, dict) or "kind" not in d:
        raise ParameterTypeError("domain", d, "a dict with a 'kind' key")
    kinds: dict[str, type[DatabaseClass]] = {"AllMultisets": AllMultisets, "FixedSize": FixedSize, "Ordered": Ordered}
    k = d["kind"]
    if k not in kinds:
        raise ParameterError("domain.kind", k, f"one of {sorted(kinds)}")
    rest = {key: v for key, v in d.items() if key != "kind"}
    try:
        return kinds[k](**rest)
    except TypeError as exc:
        raise ParameterError("domain", d, f"the keys of {k} ({exc})") from None
