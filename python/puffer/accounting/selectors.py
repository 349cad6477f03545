"""Selectors: which part of the database each release reads.

Selectors: the functions f_i that decide which part of the database release i reads
(Guerra-Balboa et al. 2024, Sec. IV: f_i : DD -> DD_i; sequential composition is f_i = id,
parallel composition a partition, and everything in between overlapping sub-databases).

* :class:`Identity` — the whole database (sequential composition, Thm IV.3).
* :class:`RecordFilter` — ``D n X_i``: the records whose value is in ``values`` (Ex. IV.4;
  filters of different releases may overlap, Ex. IV.5).
* :class:`Partition` — ``key(x)`` sends each record to at most one cell; ``p[c]`` is the
  selector of cell ``c`` (record-level partition, Ex. IV.4; non-exhaustive allowed).
* :class:`OrderPartition` — cells of identifiers of an ordered table (Ex. IV.7); ``op[i]``
  selects the rows whose identifier is in the i-th set.
* :class:`Opaque` — any function, with a declared sensitivity (Def. III.5, Prop. III.6) and
  optionally a record-level ``may_change(x)`` predicate (False: adding, removing or replacing
  record x never changes the output).

Record-level selectors (all but an Opaque without ``may_change`` and the ordered cells) expose
``sees(x)``: whether a change of record x can change the selector's output. The footprint
``A(x) = {i : release i sees x}`` drives the accountant's closed forms.

>>> f = RecordFilter(["a", "b"])
>>> sorted(f(["a", "c", "b", "a"]))
[('a', 2), ('b', 1)]
>>> p = Partition(lambda x: x % 3, cells=[0, 1, 2])
>>> p[1].sees(4), p[1].sees(5)
(True, False)
"""
from __future__ import annotations

import abc
import math
import numbers
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from ..errors import ParameterError, ParameterTypeError
from . import databases as DB

__all__ = ["Selector", "Identity", "RecordFilter", "Partition", "PartitionCell", "OrderPartition",
           "OrderCell", "Opaque", "selector_from_dict"]


class Selector(abc.ABC):
    """f_i : DD -> DD_i. ``record_level`` selectors keep or drop each record on its own."""

    record_level: bool = True
    #: the class kind the selector reads ("multiset", "ordered" or None for any)
    reads: str | None = "multiset"

    @abc.abstractmethod
    def __call__(self, D: Any) -> Any:
        """f(D)."""

    def sees(self, x: Hashable) -> bool:
        """Whether a change of record x may change f (record-level selectors)."""
        raise ParameterError("selector", self, "a record-level selector (Identity, RecordFilter, Partition "
                             "cell, or Opaque with may_change=)")

    def image(self, domain: DB.DatabaseClass) -> DB.DatabaseClass:
        """The class f(DD) (LOCAL guarantees are certified on it)."""
        return DB.Image(self, domain, kind="multiset" if self.reads == "multiset" else "opaque")

    def to_dict(self) -> dict[str, Any]:
        raise ParameterError("selector", self, "a serialisable selector (Identity, RecordFilter)")


class Identity(Selector):
    """f = id: the release reads the whole database (sequential composition).

    >>> Identity()(["a", "a"]) == DB.multiset(["a", "a"])
    True
    """

    reads = None

    def __call__(self, D: Any) -> Any:
        return DB.multiset(D) if not isinstance(D, tuple) else D

    def sees(self, x: Hashable) -> bool:
        return True

    def image(self, domain: DB.DatabaseClass) -> DB.DatabaseClass:
        return domain

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity)

    def __hash__(self) -> int:
        return hash("Identity")

    def __repr__(self) -> str:
        return "Identity()"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "Identity"}


class RecordFilter(Selector):
    """f(D) = D n values: the records whose value is in ``values`` (a record-level
    sub-database; Ex. IV.4, IV.5)."""

    def __init__(self, values: Iterable[Hashable]):
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ParameterTypeError("values", values, "an iterable of record values (a list, set, tuple)")
        try:
            vals = frozenset(values)
        except TypeError as exc:
            raise ParameterTypeError("values", values, f"hashable record values ({exc})") from None
        if not vals:
            raise ParameterError("values", values, "a non-empty set of record values")
        self.values = vals

    def __call__(self, D: Any) -> DB.MultisetT:
        return DB.restrict(DB.multiset(D), self.values.__contains__)

    def sees(self, x: Hashable) -> bool:
        return x in self.values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RecordFilter) and other.values == self.values

    def __hash__(self) -> int:
        return hash(self.values)

    def __repr__(self) -> str:
        vals = sorted(self.values, key=repr)
        shown = ", ".join(repr(v) for v in vals[:4]) + (", ..." if len(vals) > 4 else "")
        return f"RecordFilter([{shown}])"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "RecordFilter", "values": sorted(self.values, key=repr)}


class Partition:
    """A record-level partition: record x goes to cell ``key(x)`` (or to no cell when the key is
    not in ``cells``, if ``cells`` is given). ``p[c]`` is the selector of cell c.

    Cells are disjoint by construction (one key per record), so this is a k-partitioning
    function in the sense of Sec. IV-B.
    """

    def __init__(self, key: Callable[[Any], Hashable], cells: Iterable[Hashable] | None = None):
        if not callable(key):
            raise ParameterTypeError("key", key, "a callable record -> cell label")
        self.key = key
        self.cells = None if cells is None else tuple(dict.fromkeys(cells))
        if self.cells is not None and not self.cells:
            raise ParameterError("cells", cells, "None or a non-empty list of cell labels")

    def cell_of(self, x: Hashable) -> Hashable | None:
        try:
            c = self.key(x)
        except Exception as exc:  # the user's key failed on a record: say which
            raise ParameterError("key", f"key({x!r}) raised {type(exc).__name__}: {exc}",
                                 "a key function defined on every record") from None
        if self.cells is not None and c not in self.cells:
            return None
        return c

    def __getitem__(self, c: Hashable) -> PartitionCell:
        if self.cells is not None and c not in self.cells:
            raise ParameterError("cell", c, f"one of the partition's cells {list(self.cells)}")
        return PartitionCell(self, c)

    def cell(self, c: Hashable) -> PartitionCell:
        return self[c]

    def __repr__(self) -> str:
        k = "?" if self.cells is None else len(self.cells)
        return f"Partition({getattr(self.key, '__name__', 'key')}, cells={k})"


class PartitionCell(Selector):
    """The selector of one cell of a :class:`Partition`: f(D) = {x in D : key(x) = c}."""

    def __init__(self, partition: Partition, cell: Hashable):
        self.partition = partition
        self.cell = cell

    def __call__(self, D: Any) -> DB.MultisetT:
        return DB.restrict(DB.multiset(D), self.sees)

    def sees(self, x: Hashable) -> bool:
        return self.partition.cell_of(x) == self.cell

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionCell) and other.partition is self.partition and other.cell == self.cell

    def __hash__(self) -> int:
        return hash((id(self.partition), self.cell))

    def __repr__(self) -> str:
        return f"{self.partition!r}[{self.cell!r}]"


class OrderPartition:
    """Cells of identifiers of an ordered table (Ex. IV.7, Prop. A.6): ``identifier_sets`` are
    pairwise disjoint sets of identifiers (1-based). ``op[i]`` selects the rows of cell i.
    Such partitions are compatible with ordered bounded DP: a change of one identifier's value
    changes exactly one cell."""

    def __init__(self, identifier_sets: Iterable[Iterable[int]]):
        try:
            sets = [frozenset(s) for s in identifier_sets]
        except TypeError:
            raise ParameterTypeError("identifier_sets", identifier_sets, "an iterable of sets of identifiers") from None
        if not sets:
            raise ParameterError("identifier_sets", identifier_sets, "at least one cell")
        seen: dict[int, int] = {}
        for i, s in enumerate(sets):
            for n in s:
                if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
                    raise ParameterError(f"identifier_sets[{i}]", n, "identifiers: integers >= 1")
                if n in seen:
                    raise ParameterError(f"identifier_sets[{i}]", n,
                                         f"disjoint cells (identifier {n} is also in cell {seen[n]})")
                seen[n] = i
        self.sets = tuple(sets)
        self._cell = seen

    def __len__(self) -> int:
        return len(self.sets)

    def cell_of(self, n: int) -> int | None:
        return self._cell.get(n)

    def __getitem__(self, i: int) -> OrderCell:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < len(self.sets):
            raise ParameterError("cell", i, f"a cell index in [0, {len(self.sets)})")
        return OrderCell(self, int(i))

    def __repr__(self) -> str:
        return f"OrderPartition({len(self.sets)} cells)"


class OrderCell(Selector):
    """Rows of an ordered table whose identifier is in one cell: f(D) = ((n, D[n-1]), ...)."""

    reads = "ordered"
    record_level = False

    def __init__(self, partition: OrderPartition, index: int):
        self.partition = partition
        self.index = index

    def __call__(self, D: Any) -> tuple[tuple[int, Any], ...]:
        D = tuple(D)
        return tuple((n, D[n - 1]) for n in sorted(self.partition.sets[self.index]) if n <= len(D))

    def image(self, domain: DB.DatabaseClass) -> DB.DatabaseClass:
        return DB.Image(self, domain, kind="opaque")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrderCell) and other.partition is self.partition and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.partition), self.index))

    def __repr__(self) -> str:
        return f"{self.partition!r}[{self.index}]"


class Opaque(Selector):
    """Any deterministic f with a declared sensitivity (Def. III.5): on every target edge the
    release's own distance between f(D) and f(D') is at most ``sensitivity`` (Prop. III.6:
    a d_i-private M* gives a (sensitivity * d)-private M* o f). ``may_change(x)`` (optional)
    is a record-level promise: if it is False, adding, removing or replacing record x never
    changes f's output. Without it, every edge may change f.

    >>> Opaque(lambda D: len(D), sensitivity=1.0, may_change=lambda x: x != "pad").sees("pad")
    False
    """

    reads = None

    def __init__(self, fn: Callable[[Any], Any], *, sensitivity: float | None = None,
                 may_change: Callable[[Hashable], bool] | None = None):
        if not callable(fn):
            raise ParameterTypeError("fn", fn, "a callable database -> output")
        if sensitivity is not None:
            if isinstance(sensitivity, bool) or not isinstance(sensitivity, numbers.Real) or math.isnan(sensitivity) \
                    or sensitivity < 0:
                raise ParameterError("sensitivity", sensitivity, "None or a number >= 0 (inf allowed)")
            sensitivity = float(sensitivity)
        if may_change is not None and not callable(may_change):
            raise ParameterTypeError("may_change", may_change, "None or a callable record -> bool")
        self.fn = fn
        self.sensitivity = sensitivity
        self.may_change = may_change
        self.record_level = may_change is not None

    def __call__(self, D: Any) -> Any:
        return self.fn(D)

    def sees(self, x: Hashable) -> bool:
        if self.may_change is None:
            return True
        return bool(self.may_change(x))

    def image(self, domain: DB.DatabaseClass) -> DB.DatabaseClass:
        return DB.Image(self, domain, kind="opaque")

    def __repr__(self) -> str:
        return (f"Opaque({getattr(self.fn, '__name__', 'fn')}, sensitivity={self.sensitivity!r}"
                f"{', may_change=...' if self.may_change is not None else ''})")


def selector_from_dict(d: Any) -> Selector:
    """The selector a file describes (``Identity`` or ``RecordFilter``; None means ``Identity``)."""
    if d is None:
        return Identity()
    if not isinstance(d, dict) or d.get("kind") not in ("Identity", "RecordFilter"):
        raise ParameterError("selector", d, "{'kind': 'Identity'} or {'kind': 'RecordFilter', 'values': [...]}")
    if d["kind"] == "Identity":
        if len(d) != 1:
            raise ParameterError("selector", d, "{'kind': 'Identity'} with no other key")
        return Identity()
    extra = set(d) - {"kind", "values"}
    if extra:
        raise ParameterError(f"selector.{sorted(extra)[0]}", d[sorted(extra)[0]], "only 'kind' and 'values'")
    if "values" not in d:
        raise ParameterError("selector.values", "<missing>", "the list of record values of the filter")
    return RecordFilter(d["values"])

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "RecordFilter": (Ref("guerrabalboa2024", "Ex. IV.4"), Ref("guerrabalboa2024", "Ex. IV.5"),),
    "OrderPartition": (Ref("guerrabalboa2024", "Ex. IV.7"),),
}
