"""Privacy units: from raw records to one answer of the framework's query per unit.

A framework answers a query about a *unit* (a household's day of readings, a user's records);
noising each raw record instead would release T answers per unit under a guarantee computed
for one. So a framework-calibrated release must say what its rows are:

* ``unit="household"`` (records): puffer groups the records by unit (Arrow/numpy group-by,
  ordered by ``order=`` for sequence models), checks every unit against the framework and
  computes the query per unit. Supported: Markov-chain frameworks (Song, Wang & Chaudhuri
  2017; Pierquin et al. 2024): each unit must have exactly ``T`` records (a shorter chain's sum
  is another query, whose sensitivity the mechanism did not bound), every value must be one of
  the state values; ``order`` is required (for ``T > 1``: without it, a unit with one step twice
  and another missing has ``T`` records and looks complete) and must be an integer, float, date
  or timestamp column whose values are distinct within a unit and equally spaced, one step size
  in every unit (the chain's time step); the query is the sum. A framework whose Theta was
  fitted from a table (``fit_markov``) releases only the column it was fitted on (its record's
  ``column``).
  The output has one row per unit, sorted by unit id (integers by value, strings by code
  point), on every engine: the unit column and, per noisy column ``c``, the noisy sum
  ``c_sum_noisy`` (a new quantity, so a new name: the input's ``c`` was one record's value).
* ``per_unit=True`` (answers): every row is already one answer per unit (with ``unit=`` the
  unit ids must be distinct; without, each row is its own unit). The values are checked
  against the query's range (the hull of the atoms of the framework's conditional laws) and,
  when the query is integer-valued, against its lattice (offset + step Z, step the gcd of the
  differences of the atoms: :func:`query_lattice`), so 2.5 is refused where the query counts.
* neither: refused for a calibrated framework, with a message saying which to give.

Plain (uncalibrated) noise needs no declaration; with ``unit=`` its query is the sum.
A mismatch is a :class:`~puffer.errors.ParameterError` naming the unit and what was expected,
raised before anything is written.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["UnitSpec", "ANSWER_SUFFIX", "unit_spec", "query_range", "query_lattice", "group_answers", "check_answers",
           "check_unit_type", "check_order_type", "check_window_positions"]


#: records mode: the noisy per-unit sum of column ``c`` is written as ``c + ANSWER_SUFFIX``
ANSWER_SUFFIX = "_sum_noisy"


class UnitSpec:
    """What a release's rows are: ``mode`` "records" (grouped by ``column``), "answers" (one per
    unit) or "rows" (plain noise, no unit); ``query`` its name; ``T``, ``states``, ``range``."""

    def __init__(self, mode: str, column: str | None, order: str | None, query: str, T: int | None = None,
                 states: np.ndarray | None = None, rng: tuple[float, float] | None = None,
                 window: tuple[int, int] | None = None, lattice: tuple[float, float] | None = None):
        self.mode, self.column, self.order, self.query = mode, column, order, query
        self.T, self.states, self.range = T, states, rng
        #: answers mode, an integer-valued query: (step, offset), every answer is on offset + step Z
        #: (not in :meth:`describe`: it follows from the framework, whose digest the entry records)
        self.lattice = lattice
        #: a series window (:mod:`puffer.publish.series`): the positions [start, stop) of the
        #: horizon that the order column must hold, each exactly once per unit
        self.window = window

    def output_column(self, column: str) -> str:
        """The output's name for noisy column ``column``: in records mode a new quantity, the noisy
        sum per unit, named ``<column>_sum_noisy`` (:data:`ANSWER_SUFFIX`) on every engine; in
        the other modes the column keeps its name (its values, noised)."""
        return f"{column}{ANSWER_SUFFIX}" if self.mode == "records" else column

    def describe(self) -> dict[str, Any]:
        """The ledger's ``unit`` field."""
        return {"column": self.column, "order": self.order, "mode": self.mode, "query": self.query,
                "records_per_unit": self.T,
                "states": None if self.states is None else [float(v) for v in self.states],
                "range": None if self.range is None else [float(self.range[0]), float(self.range[1])],
                "output_columns": "<column>" + ANSWER_SUFFIX if self.mode == "records" else "<column>",
                # (only for a series window: re-runs of releases recorded before stay equal)
                **({"window": [int(self.window[0]), int(self.window[1])]} if self.window is not None else {})}

    def __repr__(self) -> str:
        return f"UnitSpec(mode={self.mode!r}, column={self.column!r}, query={self.query!r})"


def _arrow_types(t: Any) -> Any:
    """``pyarrow.types`` if ``t`` is an Arrow type, else None (a pandas or numpy dtype)."""
    try:
        import pyarrow as pa
    except ModuleNotFoundError:  # pragma: no cover - the io extra installs it
        return None
    return pa.types if isinstance(t, pa.DataType) else None


def check_unit_type(t: Any, column: str) -> None:
    """The unit column's declared type (an Arrow type, or a pandas/numpy dtype) holds integers or
    strings, on every engine. An object dtype (pandas, Dask) may hold anything: its batches are
    checked by :func:`puffer.publish.streams.unit_id_kind` (one type per batch) and, across a Dask
    frame's partitions, by ``puffer.dask`` (one type in all of them)."""
    at = _arrow_types(t)
    if at is not None:
        ok = at.is_integer(t) or at.is_string(t) or at.is_large_string(t) or \
            getattr(at, "is_string_view", lambda _: False)(t)
    else:
        import pandas as pd

        ok = (pd.api.types.is_integer_dtype(t) and not pd.api.types.is_bool_dtype(t)) or \
            pd.api.types.is_string_dtype(t) or pd.api.types.is_object_dtype(t)
    if not ok:
        raise ParameterTypeError("unit", f"column {column!r} of type {t}", "integer or string unit ids (their "
                                 "stream positions must not collide: floats, dates, bytes and nested values are "
                                 "not unit ids; convert the column first)")


def check_order_type(t: Any, column: str) -> None:
    """The order column's declared type (Arrow type or pandas/numpy dtype): integer, float, date
    or timestamp, so that its steps can be checked for gaps and repeats."""
    at = _arrow_types(t)
    if at is not None:
        ok = at.is_integer(t) or at.is_floating(t) or at.is_temporal(t)
    else:
        import pandas as pd

        ok = (pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t)) or \
            pd.api.types.is_datetime64_any_dtype(t)
    if not ok:
        raise ParameterTypeError("order", f"column {column!r} of type {t}", "an integer, float, date or timestamp "
                                 "column (its steps are checked for gaps and repeats)")


def check_id_counts(what: str, ident: str, n: int, distinct: int, nonnull: int, lowest: Any = None) -> None:
    """The row or unit ids of a cluster frame, from counts the cluster computed: no nulls, no
    duplicates (rows sharing an id would share their noise) and, given the ``lowest`` row id,
    none below 0."""
    n, distinct, nonnull = int(n), int(distinct), int(nonnull)
    if nonnull != n:
        raise ParameterError(what, ident, f"a column without nulls ({n - nonnull} null ids)")
    if distinct != n:
        raise ParameterError(what, ident, f"unique ids ({n - distinct} duplicates: rows sharing an id would "
                             "share their noise)")
    if lowest is not None and n and int(lowest) < 0:
        raise ParameterError("row_id", ident, f"row ids >= 0 (minimum {lowest})")


def query_range(fw: Any) -> tuple[float, float]:
    """[min, max] of the query's values under the framework (hull of its laws' atoms)."""
    from ..models import MarkovChainFramework

    if isinstance(fw, MarkovChainFramework):
        v = fw.state_values
        return float(fw.length * v.min()), float(fw.length * v.max())
    lo, hi = math.inf, -math.inf
    for th in fw.thetas:
        for s in fw.secrets:
            law = fw.conditional(th, s)
            if law is None:
                continue
            a = np.asarray(law.atoms, dtype=np.float64)
            lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError("framework", repr(fw), "a framework with conditional laws (the query's range)")
    return lo, hi


def query_lattice(fw: Any) -> tuple[float, float] | None:
    """(step, offset) when every value of the (1-D) query is an integer on offset + step Z (step:
    the gcd of the differences of the atoms of the framework's conditional laws), else None (a
    real-valued or vector query). The atoms are those :func:`query_range` takes its hull of.

    >>> import puffer
    >>> query_lattice(puffer.models.correlated_pair())
    (1.0, 0.0)
    >>> query_lattice(puffer.models.markov_chain([[[.9, .1], [.2, .8]]], T=3, values=[0.0, 0.5])) is None
    True
    """
    from ..framework import _integer_lattice
    from ..models import MarkovChainFramework

    if int(fw.dim) != 1:
        return None
    if isinstance(fw, MarkovChainFramework):
        lat: tuple[float, float] | None = fw.query_lattice()
        return lat
    atoms = [np.asarray(law.atoms, dtype=np.float64).ravel() for th in fw.thetas for s in fw.secrets
             if (law := fw.conditional(th, s)) is not None]
    return _integer_lattice(np.unique(np.concatenate(atoms))) if atoms else None


def unit_spec(plan: Any, unit: Any, order: Any, per_unit: Any, columns: list[str]) -> UnitSpec:
    """Validate the declaration against the plan (see the module docstring)."""
    from ..models import MarkovChainFramework

    for name, v in (("unit", unit), ("order", order)):
        if v is not None and not isinstance(v, str):
            raise ParameterTypeError(name, v, "a column name or None")
    if not isinstance(per_unit, bool):
        raise ParameterTypeError("per_unit", per_unit, "True or False")
    if order is not None and unit is None:
        raise ParameterError("order", order, "None unless unit= is given (order sorts each unit's records)")
    for name, v in (("unit", unit), ("order", order)):
        if v is not None and v in columns:
            raise ParameterError(name, v, "a column that is not one of the noisy columns")
    if unit is not None and order == unit:
        raise ParameterError("order", order, "a column other than the unit column")
    if unit is not None and not per_unit and unit in {c + ANSWER_SUFFIX for c in columns}:
        raise ParameterError("unit", unit, f"a name other than an output column's (records mode writes the noisy sum "
                             f"of column c as c{ANSWER_SUFFIX})")
    m = plan.mechanism
    fw = None if m is None else m.framework
    if per_unit:
        if order is not None:
            raise ParameterError("order", order, "None with per_unit=True (each row is already one answer)")
        rng = None if fw is None else query_range(fw)
        lat = None if fw is None else query_lattice(fw)
        return UnitSpec("answers", unit, None, "given per unit", rng=rng, lattice=lat)
    if unit is None:
        if m is not None:
            raise ParameterError("unit", None, f"a privacy unit: the mechanism ({plan.label}) answers its framework's "
                                 "query once per unit, so raw rows (e.g. one per reading) cannot be released "
                                 "under its guarantee. Give unit=COLUMN (and order=COLUMN) to let puffer compute "
                                 "the query per unit, or per_unit=True if each row is already one answer")
        return UnitSpec("rows", None, None, "identity (uncalibrated noise)")
    if m is None:
        return UnitSpec("records", unit, order, "sum (uncalibrated noise)")
    if not isinstance(fw, MarkovChainFramework):
        raise ParameterError("unit", unit, f"a framework whose per-unit query puffer can compute from records "
                             f"(Markov-chain sum frameworks); for {type(fw).__name__}, aggregate per unit "
                             "yourself and pass per_unit=True")
    if int(fw.dim) != 1:
        raise ParameterError("unit", unit, "a scalar query")
    fit = getattr(fw, "fit", None)   # Theta fitted from a table's state column: release that column
    if fit is not None and getattr(fit, "column", None) is not None and list(columns) != [fit.column]:
        raise ParameterError("columns", list(columns), f"[{fit.column!r}]: the framework's Theta was fitted on the "
                             f"states of column {fit.column!r} (puffer.models.fit_markov), so its guarantee is for "
                             "that column's sums; fit Theta on the column you release")
    if order is None and int(fw.length) > 1:
        raise ParameterError("order", None, f"the column of each record's time step: the framework is a Markov "
                             f"chain of T = {int(fw.length)} steps per unit, and without the steps a unit with one "
                             "step twice and another missing looks complete (puffer checks that each unit's steps "
                             "are distinct and equally spaced)")
    return UnitSpec("records", unit, order, "sum over the unit's T records (Markov chain)", T=int(fw.length),
                    states=np.unique(fw.state_values), rng=query_range(fw))


def _name(ids: np.ndarray, i: int) -> Any:
    v = ids[i]
    return v.item() if hasattr(v, "item") else v


def check_answers(spec: UnitSpec, column: str, vals: np.ndarray, ids: Any, first_row: int) -> None:
    """Every answer within the query's range and, for an integer-valued query, on its lattice
    (answers mode)."""
    if spec.range is None or vals.size == 0:
        return
    lo, hi = spec.range
    nan = np.isnan(vals)  # nulls (NaN): handled by nulls=
    bad = np.flatnonzero(~((vals >= lo) & (vals <= hi)) & ~nan)

    def who(i: int) -> str:
        return f"unit {_name(np.asarray(ids), i)!r}" if ids is not None else f"row {first_row + i}"

    if bad.size:
        i = int(bad[0])
        raise ParameterError(f"column {column!r}", f"{float(vals[i])!r} at {who(i)}",
                             f"an answer of the framework's query, in [{lo:g}, {hi:g}] (per_unit=True declares "
                             "each row to be one unit's answer)")
    if spec.lattice is not None:
        step, offset = spec.lattice
        # exact: an integer value minus the integer offset is exact below 2^53, and fmod is exact
        with np.errstate(invalid="ignore"):
            off = (vals != np.round(vals)) | (np.fmod(vals - offset, step) != 0)
        bad = np.flatnonzero(off & ~nan)
        if bad.size:
            i = int(bad[0])
            on = "an integer" if step == 1.0 else f"{offset:g} + {step:g} k for an integer k"
            raise ParameterError(f"column {column!r}", f"{float(vals[i])!r} at {who(i)}",
                                 f"an answer of the framework's query, which is integer-valued: {on} in "
                                 f"[{lo:g}, {hi:g}] (per_unit=True declares each row to be one unit's answer; "
                                 "for real-valued answers use a framework whose query takes real values)")


def _check_steps(so: Any, su: Any, same: Any) -> None:
    """One step size between consecutive records, in every unit (a Markov chain's time step): a
    missing step is a gap, whatever the unit's record count."""
    d = so[1:] - so[:-1]
    pairs = np.flatnonzero(same)
    if pairs.size == 0:
        return
    step = d[pairs[0]]
    bad = pairs[d[pairs] != step]
    if bad.size:
        i = int(bad[0])
        raise ParameterError("order", f"unit {_name(su, i)!r}: a step from {_name(so, i)} to {_name(so, i + 1)}",
                             f"the same step between consecutive records in every unit (the chain's time step, "
                             f"{_name(d, int(pairs[0]))} in the first unit): a record is missing or repeated")


def check_window_positions(positions: Any, ids: Any, window: tuple[int, int]) -> None:
    """Every record of a series window at a position of that window (:mod:`puffer.publish.series`):
    ``positions`` the order column's values (integers, or floats holding integers), ``ids`` the
    unit ids of the same rows; the first row outside ``[start, stop)`` is refused, named by its
    row, unit and position."""
    a, b = int(window[0]), int(window[1])
    pos = np.asarray(positions)
    if pos.dtype.kind not in "iuf":
        raise ParameterTypeError("order", f"a column of type {pos.dtype}", "integer positions of the series' "
                                 "horizon")
    with np.errstate(invalid="ignore"):
        bad = ~((pos >= a) & (pos < b)) | (pos != np.floor(pos) if pos.dtype.kind == "f" else False)
    hit = np.flatnonzero(bad)
    if hit.size:
        i = int(hit[0])
        raise ParameterError("order", f"position {_name(pos, i)!r} at row {i} (unit {_name(np.asarray(ids), i)!r})",
                             f"a position of the series window, an integer in [{a}, {b}) ({hit.size} row(s) "
                             "outside it)")


def group_answers(table: Any, spec: UnitSpec, columns: list[str]) -> tuple[Any, NDArray[np.int64]]:
    """(table of one row per unit: unit column + the query per column, sorted by unit; int64
    stream positions of those units). Checks every unit (see the module docstring)."""
    import pyarrow as pa

    from .streams import unit_positions
    from .values import check_integers

    u = table.column(spec.column)
    if u.null_count:
        raise ParameterError("unit", spec.column, "no null unit ids")
    check_unit_type(u.type, str(spec.column))
    ids = u.to_numpy(zero_copy_only=False)
    n = ids.size
    keys = [ids]
    if spec.order is not None:
        o = table.column(spec.order)
        if o.null_count:
            raise ParameterError("order", spec.order, "no null order values")
        check_order_type(o.type, spec.order)
        ov = o.to_numpy(zero_copy_only=False)
        if spec.window is not None:
            check_window_positions(ov, ids, spec.window)
        perm = np.lexsort((ov, ids)) if n else np.zeros(0, dtype=np.int64)
        so, su = ov[perm], ids[perm]
        same = su[1:] == su[:-1]
        dup = np.flatnonzero(same & (so[1:] == so[:-1]))
        if dup.size:
            i = int(dup[0])
            raise ParameterError("order", f"{_name(so, i)!r} twice in unit {_name(su, i)!r}",
                                 "distinct order values within each unit (one record per step)")
        steps = (so, su, same) if spec.T is not None and n > 1 else None
    else:
        perm = np.argsort(ids, kind="stable") if n else np.zeros(0, dtype=np.int64)
        steps = None
    del keys
    su = ids[perm]
    uniq, start, counts = np.unique(su, return_index=True, return_counts=True)
    if spec.T is not None:
        bad = np.flatnonzero(counts != spec.T)
        if bad.size:
            j = int(bad[0])
            raise ParameterError("unit", f"unit {_name(uniq, j)!r} with {int(counts[j])} records",
                                 f"exactly T = {spec.T} records per unit (the framework's chain length; "
                                 f"{bad.size} of {uniq.size} units differ)")
    if steps is not None:
        _check_steps(*steps)  # after the count: a short unit is named as such
    out = {spec.column: pa.array(uniq, type=u.type)}
    for c in columns:
        col = table.column(c)
        if col.null_count:
            where = int(np.flatnonzero(~np.asarray(col.is_valid()))[0])
            raise ParameterError(f"column {c!r}", f"null in unit {_name(ids, where)!r}", "no nulls in unit records")
        v = col.to_numpy(zero_copy_only=False)
        check_integers(v, c, 0)
        v = v.astype(np.float64)[perm]
        if not np.isfinite(v).all():
            i = int(np.flatnonzero(~np.isfinite(v))[0])
            raise ParameterError(f"column {c!r}", f"{v[i]} in unit {_name(su, i)!r}", "finite values")
        if spec.states is not None:
            bad = np.flatnonzero(~np.isin(v, spec.states))
            if bad.size:
                i = int(bad[0])
                raise ParameterError(f"column {c!r}", f"{float(v[i])!r} in unit {_name(su, i)!r}",
                                     f"one of the framework's state values {[float(s) for s in spec.states]}")
        # sequential sums in (unit, order) order: deterministic, the same on every re-run
        sums = np.add.reduceat(v, start) if v.size else np.zeros(0)
        out[c] = pa.array(sums, type=pa.float64())
    res = pa.table(out)
    return res, unit_positions(uniq)
