"""Markov-chain frameworks fitted from traces: Theta from data, and what it covers.

:func:`fit_markov` counts the transitions of observed traces (records (unit, order, state), by
group and by phase of a period, e.g. the 48 half-hours of a day), estimates one transition
matrix per (group, phase) and a *credible box* around each of them that holds the true matrices
with the stated probability, and builds the framework (Song, Wang, Chaudhuri 2017 setting; any
transition structure) whose Theta is a finite set of matrices inside
that box. The fit is recorded in the framework (:class:`MarkovFit`: method, level, counts,
data digest, warnings about thin counts, the box) and reproduces it (:func:`refit`).

What a finite Theta covers, and what it does not. The box B is the product over groups, phases
and rows of per-row boxes, each at the Sidak level level^(1/rows) (rows are independent under
the Dirichlet posterior, so B holds the true matrices with posterior probability >= level;
entries of a row with k >= 3 states are boxed at Bonferroni's 1 - (1 - row level) / k). Theta
holds, per group, the point estimate and k + 2 extreme matrices of B: every row pushed as far
as B allows towards staying (the diagonal at its upper bound), towards each state j, and
towards the next state (x + 1 mod k) -- for k = 2 these are the four corners of every phase's
box, all phases moved together. The Pufferfish guarantee computed on the framework holds for
beliefs IN Theta, not for every matrix of B: Delta_G is not monotone or convex in the matrices,
so no finite set is certified to contain B's worst case. Beliefs in B outside Theta are covered
by the close-adversary theorems (:func:`puffer.models.close_adversary`: the W_inf divergence
from Theta to a belief and the resulting eps; over all of B at once, a data-level divergence,
rigorous but loose for long chains); :func:`puffer.models.theta_profile` shows how Delta_G moves
with the level.

Methods: ``"dirichlet"`` -- the posterior Dir(counts + prior) of each row, exact Beta quantiles;
``"bootstrap"`` -- units resampled with replacement (``n_boot`` times, seeded), each entry's
interval estimate +- z se on the logit scale with se the larger of the bootstrap standard
error and the binomial one (a normal-approximation bootstrap interval: approximate, and the
choice for traces whose units are independent but whose counts may be overdispersed).
"""
from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from . import MarkovChainFramework

__all__ = ["fit_markov", "MarkovFit", "FitWarning", "refit", "read_traces"]

_METHODS = ("bootstrap", "dirichlet")


class FitWarning(UserWarning):
    """A fit whose counts are too thin for its intervals to be trusted (also recorded in
    :attr:`MarkovFit.warnings`)."""


@dataclass(frozen=True)
class Traces:
    """Records as integer codes: unit index, order, state index, group index (one per record),
    with the labels of units, states and groups."""

    unit: np.ndarray
    order: np.ndarray
    state: np.ndarray
    group: np.ndarray
    unit_labels: list[Any]
    state_labels: list[Any]
    group_labels: list[Any]

    def digest(self) -> str:
        """sha256 of the canonical records (sorted by unit and order) and labels."""
        o = np.lexsort((self.order, self.unit))
        h = hashlib.sha256()
        for a in (self.unit[o], self.order[o], self.state[o], self.group[o]):
            h.update(np.ascontiguousarray(a, dtype="<i8").tobytes())
        h.update(json.dumps([[_plain(x) for x in self.unit_labels], [_plain(x) for x in self.state_labels],
                             [_plain(x) for x in self.group_labels]]).encode())
        return "sha256:" + h.hexdigest()


def _plain(x: Any) -> Any:
    """A JSON-able scalar (numpy scalars as Python numbers, other objects as strings)."""
    if isinstance(x, np.generic):
        x = x.item()
    return x if isinstance(x, (str, int, float, bool)) or x is None else str(x)


def _codes(name: str, values: np.ndarray, labels: Sequence[Any] | None) -> tuple[np.ndarray, list[Any]]:
    if labels is None:
        try:
            lab, inv = np.unique(values, return_inverse=True)
        except TypeError as exc:
            raise ParameterTypeError(name, values[:5].tolist(), "values that can be sorted") from exc
        return inv.reshape(-1).astype(np.int64), [_plain(x) for x in lab.tolist()]
    given = list(labels)
    index = {_plain(x): i for i, x in enumerate(given)}
    if len(index) != len(given):
        raise ParameterError(name, given, "distinct labels")
    try:
        uniq, inv = np.unique(values, return_inverse=True)
    except TypeError as exc:
        raise ParameterTypeError(name, values[:5].tolist(), "values that can be sorted") from exc
    code = np.empty(uniq.size, dtype=np.int64)
    for i, v in enumerate(uniq.tolist()):
        j = index.get(_plain(v))
        if j is None:
            raise ParameterError(name, v, f"one of {given} (record {int(np.flatnonzero(inv.reshape(-1) == i)[0])})")
        code[i] = j
    return code[inv.reshape(-1)], [_plain(x) for x in given]


def read_traces(traces: Any, *, columns: Sequence[str] = ("unit", "order", "state"), groups: Any = None,
                states: Sequence[Any] | None = None) -> Traces:
    """Records from a 2-D array (one row per unit, the column index is the order; NaN or a
    masked entry is a missing record), a pandas DataFrame, a pyarrow Table or a Parquet / CSV
    file path with the columns ``columns`` = (unit, order, state). ``groups``: a column name
    (tables), or one label per unit (arrays) or per record (an array of the traces' shape).
    ``states``: the states in order (default: the sorted distinct values)."""
    if isinstance(traces, (str, os.PathLike)):
        traces = _read_file(os.fspath(traces))
    if isinstance(traces, np.ndarray) or isinstance(traces, (list, tuple)):
        return _from_array(traces, groups, states)
    cols = list(columns)
    if len(cols) != 3 or not all(isinstance(c, str) for c in cols):
        raise ParameterError("columns", columns, "three column names (unit, order, state)")
    table = _table_columns(traces, cols + ([groups] if isinstance(groups, str) else []))
    if groups is not None and not isinstance(groups, str):
        raise ParameterTypeError("groups", groups, "a column name of the table (or None)")
    u, o, s = (table[c] for c in cols)
    keep = np.array([v is not None and not (isinstance(v, float) and math.isnan(v)) for v in s.tolist()], bool) \
        if s.dtype == object or s.dtype.kind == "f" else np.ones(s.shape[0], bool)
    if o.dtype.kind not in "iu":
        if o.dtype.kind == "f" and np.all(np.isfinite(o)) and np.all(o == np.round(o)):
            o = o.astype(np.int64)
        else:
            raise ParameterTypeError(f"column {cols[1]!r}", o[:5].tolist(), "integer orders (time indices, e.g. "
                                     "half-hours since a midnight: the phase of a record is order mod period)")
    g = table[groups] if isinstance(groups, str) else np.zeros(u.shape[0], dtype=np.int64)
    u, o, s, g = u[keep], o[keep].astype(np.int64), s[keep], g[keep]
    if s.dtype.kind == "f" and states is None and np.all(s == np.round(s)):
        s = s.astype(np.int64)          # integer states read as floats (a column with nulls)
    uc, ul = _codes(cols[0], u, None)
    sc, sl = _codes(cols[2], s, states)
    gc, gl = _codes("groups", g, None)
    return Traces(uc, o, sc, gc, ul, sl, gl if isinstance(groups, str) else [None])


def _read_file(path: str) -> Any:
    if not os.path.exists(path):
        raise ParameterError("traces", path, "an existing Parquet or CSV file")
    fmt = "Parquet" if path.endswith(".parquet") else "CSV" if path.endswith(".csv") else None
    if fmt is None:
        raise ParameterError("traces", path, "a .parquet or .csv file")
    try:
        reader = importlib.import_module(f"pyarrow.{fmt.lower()}")
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"reading {fmt} needs pyarrow: pip install 'puffer-privacy[io]'") from exc
    return reader.read_table(path) if fmt == "Parquet" else reader.read_csv(path)


def _table_columns(t: Any, names: list[str]) -> dict[str, np.ndarray]:
    arrow = hasattr(t, "column_names") and hasattr(t, "column")      # pyarrow Table
    if arrow:
        have = [str(c) for c in t.column_names]
    elif hasattr(t, "columns") and hasattr(t, "__getitem__"):      # pandas DataFrame
        have = [str(c) for c in t.columns]
    else:
        raise ParameterTypeError("traces", t, "a 2-D array, a pandas DataFrame, a pyarrow Table or "
                                 "a Parquet / CSV path")
    for c in names:
        if c not in have:
            raise ParameterError("columns", c, f"a column of the traces (have {have})")
    if arrow:
        return {c: np.asarray(t.column(c).to_numpy(zero_copy_only=False)) for c in names}
    return {c: np.asarray(t[c].to_numpy()) for c in names}


def _from_array(a: Any, groups: Any, states: Sequence[Any] | None) -> Traces:
    ma = np.ma.asarray(a)
    if ma.ndim != 2 or ma.shape[0] < 1 or ma.shape[1] < 2:
        raise ParameterError("traces", f"shape {ma.shape}", "a 2-D array (units, orders) with >= 2 columns")
    mask = np.ma.getmaskarray(ma)
    data = np.asarray(ma.data)
    if data.dtype.kind == "f":
        mask = mask | np.isnan(data)
    elif data.dtype.kind not in "iub" and data.dtype != object and data.dtype.kind != "U":
        raise ParameterTypeError("traces", str(data.dtype), "states (numbers or labels)")
    n, L = data.shape
    uu, oo = np.nonzero(~mask)
    vals = data[uu, oo]
    if data.dtype.kind == "f" and states is None and np.all(vals == np.round(vals)):
        vals = vals.astype(np.int64)
    sc, sl = _codes("traces", vals, states)
    if groups is None:
        gc, gl = np.zeros(uu.size, np.int64), [None]
    else:
        g = np.asarray(groups)
        if g.shape == (n,):
            gv = g[uu]
        elif g.shape == (n, L):
            gv = g[uu, oo]
        else:
            raise ParameterError("groups", f"shape {g.shape}", f"one label per unit ({n},) or per record ({n}, {L})")
        gc, gl = _codes("groups", gv, None)
    return Traces(uu.astype(np.int64), oo.astype(np.int64), sc, gc, list(range(n)), sl, gl)


# ------------------------------------------------------------------ counts and boxes

def transition_counts(tr: Traces, period: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(counts (G, P, k, k), per-unit counts (U, G, P, k, k)) of consecutive records (order j
    and j + 1 of one unit), by the group and phase (order mod P) of the departing record."""
    P = 1 if period is None else period
    G, k, U = len(tr.group_labels), len(tr.state_labels), len(tr.unit_labels)
    o = np.lexsort((tr.order, tr.unit))
    u, t, s, g = tr.unit[o], tr.order[o], tr.state[o], tr.group[o]
    if np.any((u[1:] == u[:-1]) & (t[1:] == t[:-1])):
        j = int(np.flatnonzero((u[1:] == u[:-1]) & (t[1:] == t[:-1]))[0])
        raise ParameterError("traces", f"unit {tr.unit_labels[u[j]]!r}, order {int(t[j])}",
                             "one record per unit and order (this one repeats)")
    nxt = (u[1:] == u[:-1]) & (t[1:] == t[:-1] + 1)
    i = np.flatnonzero(nxt)
    ph = np.mod(t[i], P)
    per_unit = np.zeros((U, G, P, k, k), dtype=np.int64)
    np.add.at(per_unit, (u[i], g[i], ph, s[i], s[i + 1]), 1)
    return per_unit.sum(axis=0), per_unit


def _fresh_seed() -> int:
    """A random 63-bit seed (recorded in the fit, so that it can be reproduced)."""
    return int(np.random.default_rng().integers(0, 2**63 - 1))


def _levels(level: float, rows: int, k: int) -> float:
    """The per-entry level: Sidak over the independent rows, Bonferroni over a row's entries
    (k = 2: one free entry per row, the row's own level)."""
    row = float(level ** (1.0 / rows))
    return row if k == 2 else 1.0 - (1.0 - row) / k


def _dirichlet_box(counts: np.ndarray, prior: float, level_e: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from scipy.stats import beta

    a = counts + prior
    A = a.sum(axis=-1, keepdims=True)
    est = a / A
    q = (1.0 - level_e) / 2.0
    lo = beta.ppf(q, a, A - a)
    hi = beta.isf(q, a, A - a)
    return est, lo, hi


def _bootstrap_box(per_unit: np.ndarray, prior: float, level_e: float, n_boot: int, seed: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from scipy.stats import norm

    U = per_unit.shape[0]
    counts = per_unit.sum(axis=0)
    a = counts + prior
    est = a / a.sum(axis=-1, keepdims=True)
    flat = per_unit.reshape(U, -1).astype(np.float64)
    rng = np.random.default_rng(seed)
    s1 = np.zeros(counts.shape)
    s2 = np.zeros(counts.shape)
    done = 0
    while done < n_boot:
        b = min(200, n_boot - done)
        w = rng.multinomial(U, np.full(U, 1.0 / U), size=b).astype(np.float64)
        c = (w @ flat).reshape((b,) + counts.shape) + prior
        lg = np.log(c) - np.log(c.sum(axis=-1, keepdims=True) - c)
        s1 += lg.sum(axis=0)
        s2 += (lg * lg).sum(axis=0)
        done += b
    mean = s1 / n_boot
    se_boot = np.sqrt(np.maximum(s2 / n_boot - mean * mean, 0.0) * n_boot / max(n_boot - 1, 1))
    N = a.sum(axis=-1, keepdims=True)
    se_bin = 1.0 / np.sqrt(N * est * (1.0 - est))      # delta method for logit(p), N (+ prior) trials
    se = np.maximum(se_boot, se_bin)
    z = float(norm.isf((1.0 - level_e) / 2.0))
    lg0 = np.log(est) - np.log1p(-est)
    lo = 1.0 / (1.0 + np.exp(-(lg0 - z * se)))
    hi = 1.0 / (1.0 + np.exp(-(lg0 + z * se)))
    return est, lo, hi


def _corner(est: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Rows of the box pushed towards ``target`` (one state per row, broadcast over the leading
    axes): every entry at its lower bound, the rest of the mass to the target up to its upper
    bound, then to the other states in order up to theirs. In the box and on the simplex
    (sum lo <= 1 <= sum hi holds since the box contains the estimate)."""
    k = est.shape[-1]
    r = lo.copy()
    left = 1.0 - r.sum(axis=-1)
    order = [target] + [np.full_like(target, j) for j in range(k)]
    for idx in order:
        room = np.take_along_axis(hi - r, idx[..., None], axis=-1)[..., 0]
        add = np.clip(np.minimum(room, left), 0.0, None)
        np.put_along_axis(r, idx[..., None], (np.take_along_axis(r, idx[..., None], axis=-1)[..., 0] + add)[..., None],
                          axis=-1)
        left = left - add
    return cast(np.ndarray, r / r.sum(axis=-1, keepdims=True))


def _patterns(k: int) -> list[tuple[str, np.ndarray]]:
    """(name, target state of each row): stay, towards each state, towards the next state."""
    x = np.arange(k)
    out = [("stay", x.copy())] + [(f"to {j}", np.full(k, j)) for j in range(k)] + [("next", (x + 1) % k)]
    return out


# ------------------------------------------------------------------ the record

@dataclass(frozen=True)
class MarkovFit:
    """How a fitted framework's Theta was obtained (:func:`fit_markov`): every input of the
    fit, the transition counts (groups x phases x from x to), the data's digest, the warnings
    about thin counts and the credible box (``lower``, ``upper``, ``estimate``; same shape as
    the counts). ``to_dict()`` is the JSON-able record stored in the ledger; :func:`refit`
    rebuilds the framework from it."""

    method: str
    level: float
    T: int
    period: int | None
    prior: float
    n_boot: int
    seed: int | None
    min_count: int
    states: list[Any]
    values: list[float]
    groups: list[Any]
    init: Any
    counts: np.ndarray = field(repr=False)
    estimate: np.ndarray = field(repr=False)
    lower: np.ndarray = field(repr=False)
    upper: np.ndarray = field(repr=False)
    entry_level: float
    n_units: int
    n_records: int
    digest: str
    warnings: tuple[str, ...]
    priors: tuple[str, ...]

    @property
    def n_transitions(self) -> int:
        return int(self.counts.sum())

    def __repr__(self) -> str:
        per = "" if self.period is None else f", period {self.period}"
        return (f"MarkovFit({self.method} at {self.level:g}{per}: {self.n_units} units, {self.n_transitions} "
                f"transitions, |Theta| = {len(self.priors)}, {len(self.warnings)} warnings, {self.digest[:19]}...)")

    def summary(self) -> str:
        """A few lines for ``puffer run`` and the tutorials."""
        per = "time-homogeneous" if self.period is None else f"period {self.period}"
        lines = [f"Theta fitted from traces ({self.method}, level {self.level:g}, {per}): {self.n_units} units, "
                 f"{self.n_records} records, {self.n_transitions} transitions; data {self.digest}",
                 f"  box: per entry at level {self.entry_level:.6g} (Sidak over rows); |Theta| = {len(self.priors)} "
                 "(per group: the estimate and the box's extreme matrices)",
                 "  covers beliefs in Theta; others in the box: close_adversary()"]
        lines += [f"  warning: {w}" for w in self.warnings[:5]]
        if len(self.warnings) > 5:
            lines.append(f"  ... {len(self.warnings) - 5} more warnings")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "fit_markov", "method": self.method, "level": self.level, "T": self.T, "period": self.period,
                "prior": self.prior, "n_boot": self.n_boot, "seed": self.seed, "min_count": self.min_count,
                "states": [_plain(s) for s in self.states], "values": [float(v) for v in self.values],
                "groups": [_plain(g) for g in self.groups], "init": self.init,
                "counts": self.counts.tolist(), "entry_level": self.entry_level, "n_units": self.n_units,
                "n_records": self.n_records, "digest": self.digest, "warnings": list(self.warnings),
                "priors": list(self.priors)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MarkovFit:
        """The record of :meth:`to_dict` (the box is recomputed from the counts by :func:`refit`)."""
        if not isinstance(d, dict) or d.get("kind") != "fit_markov":
            raise ParameterError("fit", d if not isinstance(d, dict) else d.get("kind"), "a fit_markov record")
        # a ledger entry's record has no counts (a keyed digest instead: puffer.publish.release.fit_record)
        c = np.asarray(d["counts"], dtype=np.int64) if "counts" in d else np.zeros(0, dtype=np.int64)
        nan = np.full(c.shape, np.nan)
        return cls(d["method"], float(d["level"]), int(d["T"]), d["period"], float(d["prior"]), int(d["n_boot"]),
                   d["seed"], int(d["min_count"]), list(d["states"]), list(d["values"]), list(d["groups"]),
                   d["init"], c, nan, nan, nan, float(d["entry_level"]), int(d["n_units"]), int(d["n_records"]),
                   d["digest"], tuple(d["warnings"]), tuple(d["priors"]))


def fit_markov(traces: Any, *, T: int, period: int | None = None, groups: Any = None, level: float = 0.95,
               method: str = "bootstrap", states: Sequence[Any] | None = None, values: Any = None,
               columns: Sequence[str] = ("unit", "order", "state"), prior: float = 0.5, n_boot: int = 1000,
               seed: int | None = None, min_count: int = 20, init: Any = "stationary",
               threads: int = 0) -> MarkovChainFramework:
    """A Markov-chain framework whose Theta is fitted from traces (see the module docstring).

    Parameters
    ----------
    traces : array, DataFrame, pyarrow Table or path
        Records (unit, order, state): a 2-D array (units x orders; NaN / masked = missing),
        a pandas DataFrame, a pyarrow Table or a Parquet / CSV path (``columns`` names them).
        Transitions are counted between consecutive orders of a unit; the phase of a record is
        its order mod ``period`` (arrays: the column index), so order 0 must be phase 0.
    T : int
        The length of the released chain (e.g. 336 half-hours for a week); it starts at phase 0.
    period : int, optional
        P for per-phase matrices (e.g. 48: time of day); None: one matrix per group.
    groups : column name or labels, optional
        A column (tables) or labels per unit / per record (arrays); each group gets its own
        matrices, and Theta is the union of the groups' sets.
    level : float
        The probability that the box holds the true matrices (simultaneously for all rows).
    method : str
        ``"bootstrap"`` (units resampled ``n_boot`` times, ``seed``) or ``"dirichlet"``
        (posterior Dir(counts + ``prior``)).
    states, values : sequence, optional
        The states in order (default: sorted distinct values) and their values in the sum query
        (default: the states if numeric, else 0 .. k - 1).
    columns : (str, str, str)
        The unit, order and state columns of a table or file.
    prior : float
        The Dirichlet pseudo-count of ``method="dirichlet"``.
    n_boot : int
        Bootstrap resamples of ``method="bootstrap"``.
    seed : int, optional
        The bootstrap's seed.
    min_count : int
        Rows with fewer transitions are reported as thin (:class:`FitWarning` and the
        record's ``warnings``).
    init : "stationary" or array
        The initial law of each fitted chain.
    threads : int
        Threads for the chain's computations (0: the default).

    Returns
    -------
    MarkovChainFramework
        Its :attr:`~puffer.models.MarkovChainFramework.fit` holds the record of the fit.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> x = (rng.random((200, 48)) < 0.3).astype(int)          # 200 units, i.i.d. for brevity
    >>> fw = fit_markov(x, T=48, method="dirichlet")
    >>> fw.fit.method, fw.transitions.shape, len(fw.priors)
    ('dirichlet', (5, 2, 2), 5)
    """

    if method not in _METHODS:
        raise ParameterError("method", method, "'bootstrap' or 'dirichlet'")
    lev = V.real("level", level, lo=0.0, hi=1.0, lo_open=True, hi_open=True, expected="a probability in (0, 1)")
    T = V.integer("T", T, lo=1, hi=100_000)
    P = None if period is None else V.integer("period", period, lo=1, hi=100_000)
    a0 = V.positive("prior", prior)
    nb = V.integer("n_boot", n_boot, lo=2)
    mc = V.integer("min_count", min_count, lo=0)
    if method == "bootstrap" and seed is None:
        seed = _fresh_seed()   # recorded: the fit is reproducible
    sd = None if seed is None else V.integer("seed", seed, lo=0)
    tr = read_traces(traces, columns=columns, groups=groups, states=states)
    if len(tr.state_labels) < 2:
        raise ParameterError("traces", tr.state_labels, "at least two distinct states")
    counts, per_unit = transition_counts(tr, P)
    meta = _Meta(tr.state_labels, tr.group_labels, len(tr.unit_labels), int(tr.unit.size), tr.digest())
    return _build(meta, counts, per_unit, T=T, P=P, lev=lev, method=method, a0=a0, nb=nb, mc=mc, seed=sd,
                  values=values, init=init, threads=threads)


@dataclass(frozen=True)
class _Meta:
    """What a fit needs of the traces besides the counts."""

    state_labels: list[Any]
    group_labels: list[Any]
    n_units: int
    n_records: int
    digest: str


def _build(tr: _Meta, counts: np.ndarray, per_unit: np.ndarray | None, *, T: int, P: int | None, lev: float,
           method: str, a0: float, nb: int, mc: int, seed: int | None, values: Any, init: Any,
           threads: int) -> MarkovChainFramework:
    """The framework and its record from the counts (G, P, k, k) (and, for the bootstrap, the
    per-unit counts)."""
    from . import markov_chain

    k = len(tr.state_labels)
    G, Pn = counts.shape[0], counts.shape[1]
    if counts.sum() == 0:
        raise ParameterError("traces", "no two consecutive records of a unit", "traces with transitions")
    if values is None:
        try:
            vals = [float(s) for s in tr.state_labels]
        except (TypeError, ValueError):
            vals = [float(i) for i in range(k)]
    else:
        vals = [float(v) for v in V.float_array("values", values, ndim=1)]
        if len(vals) != k:
            raise ParameterError("values", values, f"{k} values, one per state {tr.state_labels}")
    rows = G * Pn * k
    lev_e = _levels(lev, rows, k)
    if method == "dirichlet":
        est, lo, hi = _dirichlet_box(counts.astype(np.float64), a0, lev_e)
    else:
        if tr.n_units < 2:
            raise ParameterError("traces", f"{tr.n_units} unit", "at least two units to resample "
                                 "(or method='dirichlet'; cut a long trace into units, e.g. days)")
        assert seed is not None and per_unit is not None
        est, lo, hi = _bootstrap_box(per_unit, a0, lev_e, nb, seed)
    lo = np.minimum(lo, est)
    hi = np.maximum(hi, est)
    warn: list[str] = []
    N = counts.sum(axis=-1)
    thin = np.argwhere(N < mc)
    for g, p, x in thin[:50]:
        where = (f"group {tr.group_labels[g]!r}, " if G > 1 else "") + (f"phase {p}, " if P is not None else "")
        warn.append(f"{where}from state {tr.state_labels[x]!r}: {int(N[g, p, x])} transitions (< {mc}); its box "
                    f"is [{float(lo[g, p, x].min()):.3g}, {float(hi[g, p, x].max()):.3g}] wide")
    if len(thin) > 50:
        warn.append(f"... {len(thin) - 50} more thin rows (of {rows})")
    if method == "bootstrap" and tr.n_units < 20:
        warn.append(f"only {tr.n_units} units to resample: the bootstrap box is unreliable")
    if warn:   # one warning per fit (the record lists every thin row)
        more = f" (and {len(warn) - 1} more in fw.fit.warnings)" if len(warn) > 1 else ""
        warnings.warn(warn[0] + more, FitWarning, stacklevel=3)
    mats, labels = [], []
    for g in range(G):
        gname = "" if G == 1 else f"{tr.group_labels[g]}: "
        mats.append(est[g])
        labels.append(f"{gname}estimate")
        for name, target in _patterns(k):
            tgt = np.broadcast_to(target, (Pn, k))
            mats.append(_corner(est[g], lo[g], hi[g], tgt))
            labels.append(f"{gname}{name}")
    M = np.stack(mats)                      # (n, Pn, k, k)
    trans = M[:, 0] if P is None else M
    fw = markov_chain(trans, T, init=init, values=vals, labels=labels, threads=threads,
                      states=[str(s) for s in tr.state_labels], period=P)
    rec = MarkovFit(method, lev, T, P, a0, nb, seed, mc, list(tr.state_labels), vals, list(tr.group_labels),
                    init if isinstance(init, str) else np.asarray(init, dtype=float).tolist(),
                    counts, est, lo, hi, lev_e, tr.n_units, tr.n_records, tr.digest, tuple(warn), tuple(labels))
    fw._set_fit(rec)
    return fw


def refit(fit: MarkovFit | dict[str, Any], traces: Any = None, *, columns: Sequence[str] = ("unit", "order", "state"),
          groups: Any = None) -> MarkovChainFramework:
    """The framework a recorded fit describes. ``"dirichlet"`` fits are rebuilt from the
    recorded counts alone (a record with counts: :meth:`MarkovFit.to_dict`; a ledger entry
    records a keyed digest of them instead, so its fit needs the traces); ``"bootstrap"`` fits
    need the traces (checked against the recorded
    digest) and reuse the recorded seed. The rebuilt framework equals the original bit for bit.

    >>> import numpy as np
    >>> x = (np.random.default_rng(2).random((50, 24)) < 0.4).astype(int)
    >>> fw = fit_markov(x, T=24, method="dirichlet", period=2)
    >>> bool((refit(fw.fit.to_dict()).transitions == fw.transitions).all())
    True
    """
    rec = fit if isinstance(fit, MarkovFit) else MarkovFit.from_dict(fit)
    kw: dict[str, Any] = dict(T=rec.T, P=rec.period, lev=rec.level, method=rec.method, a0=rec.prior,
                              nb=rec.n_boot, mc=rec.min_count, seed=rec.seed, values=rec.values, init=rec.init,
                              threads=0)
    if traces is None:
        if rec.method != "dirichlet":
            raise ParameterError("traces", None, "the traces of a bootstrap fit (its box depends on the units)")
        if rec.counts.size == 0:
            raise ParameterError("traces", None, "the traces of the fit: the record has no transition counts (a "
                                 "ledger entry records a keyed digest of them, never the counts)")
        meta = _Meta(rec.states, rec.groups, rec.n_units, rec.n_records, rec.digest)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)    # recorded in the rebuilt record as before
            return _build(meta, rec.counts, None, **kw)
    tr = read_traces(traces, columns=columns, groups=groups, states=rec.states)
    if tr.digest() != rec.digest:
        raise ParameterError("traces", tr.digest(), f"the traces of the recorded fit (digest {rec.digest})")
    counts, per_unit = transition_counts(tr, rec.period)
    meta = _Meta(tr.state_labels, tr.group_labels, len(tr.unit_labels), int(tr.unit.size), tr.digest())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return _build(meta, counts, per_unit, **kw)
