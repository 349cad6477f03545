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
so no finite set is certified to contain B's worst case. ``fw.w_inf(over="box")``
(:mod:`puffer.models.box`) bounds Delta_G over every chain of B, certified, beside the corner
maximum, and ``fw.box_framework()`` releases with that bound. Beliefs in B outside Theta are
also covered by the close-adversary theorems (:func:`puffer.models.close_adversary`: the W_inf
divergence from Theta to a belief and the resulting eps; over all of B at once, a data-level
divergence, rigorous but loose for long chains); :func:`puffer.models.theta_profile` shows how
Delta_G moves with the level.

What the level means. ``"dirichlet"``: a posterior probability -- under the prior Dir(prior)
on each row (rows independent), given the counts, B holds the true matrices with probability
``level`` (exactly, for k = 2; tested with chains drawn from the prior). It is a Bayesian
statement: for one fixed chain, the frequentist coverage of the box over repeated samples is
near the level but not guaranteed (0.8845 and 0.906 were measured for period 4 at 0.90).
``"bootstrap"``: an approximate frequentist interval (on simulated traces it covered at or
above the level). A private fit (``private=``) is a Dirichlet box widened for the noise.

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
from ..guarantees import round_up

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
    columns: tuple[str, str, str] | None = None     # (unit, order, state) of a table; None for an array

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
                states: Sequence[Any] | None = None, check_layout: bool = True) -> Traces:
    """Records from a 2-D array (one row per unit, the column index is the order; NaN or a
    masked entry is a missing record), a pandas DataFrame, a pyarrow Table or a Parquet / CSV
    file path with the columns ``columns`` = (unit, order, state). ``groups``: a column name
    (tables), or one label per unit (arrays) or per record (an array of the traces' shape).
    ``states``: the states in order (default: the sorted distinct values). ``check_layout``:
    refuse an array that looks transposed (orders x units, :func:`_layout_check`).

    Refused: a state or a unit id that is +-inf, a missing (NaN / None) unit id, a non-integer
    order."""
    if not isinstance(check_layout, bool):
        raise ParameterTypeError("check_layout", check_layout, "True or False")
    if isinstance(traces, (str, os.PathLike)):
        traces = _read_file(os.fspath(traces))
    if isinstance(traces, np.ndarray) or isinstance(traces, (list, tuple)):
        return _from_array(traces, groups, states, check_layout)
    cols = list(columns)
    if len(cols) != 3 or not all(isinstance(c, str) for c in cols):
        raise ParameterError("columns", columns, "three column names (unit, order, state)")
    table = _table_columns(traces, cols + ([groups] if isinstance(groups, str) else []))
    if groups is not None and not isinstance(groups, str):
        raise ParameterTypeError("groups", groups, "a column name of the table (or None)")
    u, o, s = (table[c] for c in cols)
    _refuse_infinite(f"column {cols[2]!r} (states)", s)
    _refuse_missing_units(f"column {cols[0]!r} (unit ids)", u)
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
    return Traces(uc, o, sc, gc, ul, sl, gl if isinstance(groups, str) else [None], (cols[0], cols[1], cols[2]))


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))


def _refuse_infinite(name: str, values: np.ndarray) -> None:
    """+-inf is no state (a float array would cast it to an integer state -2^63; pandas to an
    OverflowError)."""
    if values.dtype.kind == "f":
        bad = np.flatnonzero(np.isinf(values))
    elif values.dtype == object:
        bad = np.array([i for i, v in enumerate(values.tolist())
                        if isinstance(v, (float, np.floating)) and math.isinf(v)], dtype=np.int64)
    else:
        return
    if bad.size:
        i = int(bad[0])
        raise ParameterError(name, f"{values[i]!r} (record {i})", "finite states (NaN or a masked entry marks a "
                             "missing record)")


def _refuse_missing_units(name: str, values: np.ndarray) -> None:
    """A NaN / None unit id would become a unit of its own (NaNs do not even compare equal)."""
    if values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values))
    elif values.dtype == object:
        bad = np.array([i for i, v in enumerate(values.tolist())
                        if _is_missing(v) or (isinstance(v, (float, np.floating)) and math.isinf(v))],
                       dtype=np.int64)
    else:
        return
    if bad.size:
        i = int(bad[0])
        raise ParameterError(name, f"{values[i]!r} (record {i})", "a unit id on every record (finite; drop the "
                             "records without one)")


# A 2-D array is (units x orders): consecutive entries of a row are consecutive steps of one
# unit, consecutive rows are different units. Transposed (orders x units), the roles swap; the
# check below compares, along each axis, how often neighbours agree with how often they would
# if they were independent draws from the law of their column (axis 0) or row (axis 1).
_LAYOUT_Z = 6.0        # neighbouring rows more alike than independent units by this many s.d.
_LAYOUT_Z_TIME = 3.0   # ... while neighbouring columns are within this many s.d. of independent


def _agreement_z(codes: np.ndarray, present: np.ndarray) -> float:
    """z-score of the agreement of neighbouring rows (axis 0) against independent draws from
    each column's empirical law (the unbiased sum_s n_s (n_s - 1) / (n (n - 1)) per column)."""
    both = present[1:] & present[:-1]
    if not both.any():
        return 0.0
    same = (codes[1:] == codes[:-1]) & both
    k = int(codes[present].max()) + 1 if present.any() else 1
    n = present.sum(axis=0).astype(np.float64)
    q = np.zeros(codes.shape[1])
    for s in range(k):
        ns = ((codes == s) & present).sum(axis=0).astype(np.float64)
        q += ns * (ns - 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(n > 1, q / (n * (n - 1.0)), 0.0)
    m = both.sum(axis=0)
    mean = float((m * q).sum())
    var = float((m * q * (1.0 - q)).sum())
    return (float(same.sum()) - mean) / math.sqrt(var) if var > 0 else 0.0


def _layout_check(codes: np.ndarray, present: np.ndarray) -> None:
    """Refuse an array that looks transposed: its neighbouring rows agree far more (or less)
    than independent units would (|z| > 6) while its neighbouring columns agree as independent
    draws would (|z| < 3). For independent units in rows the first is |z| <= 6 but with
    probability ~1e-9 (a normal approximation); a chain that depends on its past in the rows
    gives a large second z."""
    if codes.shape[0] < 3 or codes.shape[1] < 3:
        return
    z_units = _agreement_z(codes, present)
    if abs(z_units) <= _LAYOUT_Z:
        return
    z_time = _agreement_z(codes.T, present.T)
    if abs(z_time) < _LAYOUT_Z_TIME:
        raise ParameterError("traces", f"an array of shape {codes.shape} whose consecutive rows look like "
                             f"consecutive steps of one unit (neighbouring rows agree {z_units:+.1f} s.d. away "
                             f"from independent units, neighbouring columns {z_time:+.1f})",
                             "one row per unit and one column per order (units x orders): pass traces.T, or "
                             "check_layout=False if the rows really are units")


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


def _from_array(a: Any, groups: Any, states: Sequence[Any] | None, check_layout: bool = True) -> Traces:
    ma = np.ma.asarray(a)
    if ma.ndim != 2 or ma.shape[0] < 1 or ma.shape[1] < 2:
        raise ParameterError("traces", f"shape {ma.shape}", "a 2-D array (units, orders) with >= 2 columns")
    mask = np.ma.getmaskarray(ma)
    data = np.asarray(ma.data)
    if data.dtype.kind == "f" or data.dtype == object:
        _refuse_infinite("traces", data[~mask])
    if data.dtype.kind == "f":
        mask = mask | np.isnan(data)
    elif data.dtype == object:
        mask = mask | np.vectorize(_is_missing, otypes=[bool])(data)
    elif data.dtype.kind not in "iub" and data.dtype != object and data.dtype.kind != "U":
        raise ParameterTypeError("traces", str(data.dtype), "states (numbers or labels)")
    n, L = data.shape
    uu, oo = np.nonzero(~mask)
    vals = data[uu, oo]
    if data.dtype.kind == "f" and states is None and np.all(vals == np.round(vals)):
        vals = vals.astype(np.int64)
    sc, sl = _codes("traces", vals, states)
    if check_layout:
        grid = np.zeros(data.shape, dtype=np.int64)
        grid[uu, oo] = sc
        _layout_check(grid, ~mask)
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

def transition_counts(tr: Traces, period: int | None, phase_offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(counts (G, P, k, k), per-unit counts (U, G, P, k, k)) of consecutive records (order j
    and j + 1 of one unit), by the group and phase ((order - phase_offset) mod P) of the
    departing record."""
    P = 1 if period is None else period
    G, k, U = len(tr.group_labels), len(tr.state_labels), len(tr.unit_labels)
    o = np.lexsort((tr.order, tr.unit))
    u, t, s, g = tr.unit[o], tr.order[o], tr.state[o], tr.group[o]
    if np.any((u[1:] == u[:-1]) & (t[1:] == t[:-1])):
        j = int(np.flatnonzero((u[1:] == u[:-1]) & (t[1:] == t[:-1]))[0])
        hint = ""
        if tr.columns is not None:
            cu, co, cs = tr.columns
            hint = (f"; are columns=({cu!r}, {co!r}, {cs!r}) the (unit, order, state) columns in that order? "
                    f"{cu!r} has {U} distinct values and {cs!r} {k}: units are usually many, states few")
        raise ParameterError("traces", f"unit {tr.unit_labels[u[j]]!r}, order {int(t[j])}",
                             "one record per unit and order (this one repeats)" + hint)
    nxt = (u[1:] == u[:-1]) & (t[1:] == t[:-1] + 1)
    i = np.flatnonzero(nxt)
    ph = np.mod(t[i] - phase_offset, P)
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


@dataclass(frozen=True)
class PrivateFit:
    """How a private fit (``fit_markov(..., private=EPS)``) noised its counts: ``eps`` of the
    fit (eps-DP under the replacement of one unit's whole traces; eps / 2 under its addition or
    removal), ``clip`` (the transitions a unit contributes at most: a unit with n > clip
    transitions counts each of them with weight clip / n), ``sensitivity`` = 2 clip (the L1
    distance of two units' clipped counts), the lattice noise of :func:`puffer.secure.secure_add_noise`
    (rounded Laplace: ``scale`` in counts, ``granularity``), ``tail``: the noise bound tau used
    to widen the box (every cell's noise within tau with probability >= 1 - ``alpha_noise``),
    ``id``: a random identifier, so that the releases made with this fit count its eps once
    in the units' totals, and ``unit``: the fit's unit column (None: the rows of an array) -- the
    eps is per unit of that column, so a release counts it as its own units' only when it names
    the same unit column (:func:`puffer.publish.release.fit_on_release`)."""

    eps: float
    clip: float
    sensitivity: float
    scale: float
    granularity: float
    tail: float
    alpha_noise: float
    id: str
    unit: str | None = None      # the fit's unit column (None: the rows of an array)

    def to_dict(self) -> dict[str, Any]:
        return {"eps": self.eps, "clip": self.clip, "sensitivity": self.sensitivity, "scale": self.scale,
                "granularity": self.granularity, "tail": self.tail, "alpha_noise": self.alpha_noise, "id": self.id,
                "unit": self.unit,
                "guarantee": {"type": "PureDP", "eps": self.eps},
                "mechanism": "Laplace (secure lattice) on the per-unit clipped transition counts"}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PrivateFit:
        return cls(float(d["eps"]), float(d["clip"]), float(d["sensitivity"]), float(d["scale"]),
                   float(d["granularity"]), float(d["tail"]), float(d["alpha_noise"]), str(d["id"]), d.get("unit"))


def _private_counts(per_unit: np.ndarray, eps: float, clip: float, level: float, unit: str | None = None
                    ) -> tuple[np.ndarray, PrivateFit]:
    """The clipped counts (each unit's L1 at most ``clip``) plus rounded Laplace lattice noise of
    scale 2 clip / eps (secure mode: OS-entropy key, exact lattice law), and the noise bound for
    half of the box's miss probability: P(some cell's noise > tau) <= sum of the cells'
    exp(-(tau - g) / scale) = (1 - level) / 2."""
    import secrets

    from ..noise import Laplace
    from ..secure import secure_add_noise

    U = per_unit.shape[0]
    flat = per_unit.reshape(U, -1).astype(np.float64)
    n = flat.sum(axis=1)
    w = np.where(n > clip, clip / np.maximum(n, 1.0), 1.0)
    clipped = (flat * w[:, None]).sum(axis=0)
    sens = 2.0 * clip
    noised, plan = secure_add_noise(clipped, Laplace(sens / eps), sensitivity=sens, norm="l1", return_plan=True)
    cells = clipped.size
    alpha_n = (1.0 - level) / 2.0
    scale = float(plan.lattice_scale)
    g = float(plan.granularity)
    tau = round_up(scale * math.log(cells / alpha_n) + g)
    rec = PrivateFit(eps, clip, sens, scale, g, tau, alpha_n, secrets.token_hex(16), unit)
    return np.asarray(noised, dtype=np.float64).reshape(per_unit.shape[1:]), rec


def _private_box(noised: np.ndarray, prior: float, level_e: float, tau: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Dirichlet box widened for the noise: every count within tau of its noised value
    (clamped at 0), each entry's bound the extreme Beta quantile over those counts -- the lower
    quantile of Beta(a_y, sum of the others) grows with a_y and falls with the others, so its
    least value is at (lowest a_y, highest others), and symmetrically for the upper one."""
    from scipy.stats import beta

    lo_c = np.maximum(noised - tau, 0.0) + prior
    hi_c = np.maximum(noised + tau, 0.0) + prior
    mid = np.maximum(noised, 0.0) + prior
    est = mid / mid.sum(axis=-1, keepdims=True)
    q = (1.0 - level_e) / 2.0
    others_hi = hi_c.sum(axis=-1, keepdims=True) - hi_c
    others_lo = lo_c.sum(axis=-1, keepdims=True) - lo_c
    lo = beta.ppf(q, lo_c, others_hi)
    hi = beta.isf(q, hi_c, others_lo)
    return est, lo, hi


def _bootstrap_box(per_unit: np.ndarray, prior: float, level_e: float, n_boot: int, seed: int,
                   report: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        if report is not None:
            report(done)
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
    column: str | None = None        # the state column of a table (None: an array)
    phase_offset: int = 0            # the order at phase 0 (phase = (order - phase_offset) mod period)
    private_fit: PrivateFit | None = None   # how the counts were noised (fit_markov(private=EPS))
    # the unit ids of a fit on a table (kept here, never recorded: the release compares them with
    # the units it publishes, puffer.publish.release); None for an array or a record
    unit_ids: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def private(self) -> float | None:
        """The fit's own eps (eps-DP under the replacement of one unit's traces) of a private fit
        (``fit_markov(..., private=EPS)``), None for a fit on the exact counts."""
        return None if self.private_fit is None else self.private_fit.eps

    @property
    def n_transitions(self) -> float:
        """The transitions counted (noised, and not an integer, for a private fit)."""
        c = float(self.counts.sum())
        return int(c) if self.private_fit is None else c

    @property
    def _transitions_text(self) -> str:
        return str(self.n_transitions) if self.private_fit is None else f"{self.n_transitions:.1f} (noised)"

    def __repr__(self) -> str:
        per = "" if self.period is None else f", period {self.period}"
        if self.private_fit is not None:
            per += f", private eps {self.private_fit.eps:g}"
        return (f"MarkovFit({self.method} at {self.level:g}{per}: {self.n_units} units, {self._transitions_text} "
                f"transitions, |Theta| = {len(self.priors)}, {len(self.warnings)} warnings, {self.digest[:19]}...)")

    def summary(self) -> str:
        """A few lines for ``puffer run`` and the tutorials."""
        per = "time-homogeneous" if self.period is None else f"period {self.period}"
        what = ("approximate coverage" if self.method != "dirichlet" else "posterior probability"
                if self.private_fit is None else "noise bound and posterior box")
        lines = [f"Theta fitted from traces ({self.method}, level {self.level:g} ({what}), {per}): {self.n_units} units, "
                 f"{self.n_records} records, {self._transitions_text} transitions; data {self.digest}",
                 f"  box: per entry at level {self.entry_level:.6g} (Sidak over rows); |Theta| = {len(self.priors)} "
                 "(per group: the estimate and the box's extreme matrices)",
                 "  covers beliefs in Theta; every chain of the box: w_inf(over='box') / box_framework(); "
                 "single beliefs: close_adversary()"]
        if self.private_fit is not None:
            pf = self.private_fit
            lines.insert(1, f"  private fit: {pf.eps:g}-DP per unit (counts clipped at {pf.clip:g} transitions per unit, "
                            f"rounded Laplace noise of scale {pf.scale:.4g}; the box widened by +-{pf.tail:.4g} counts)")
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
                "priors": list(self.priors), "column": self.column, "phase_offset": self.phase_offset,
                **({} if self.private_fit is None else
                   {"private": self.private_fit.to_dict(), "n_units": None, "n_records": None})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MarkovFit:
        """The record of :meth:`to_dict` (the box is recomputed from the counts by :func:`refit`)."""
        if not isinstance(d, dict) or d.get("kind") != "fit_markov":
            raise ParameterError("fit", d if not isinstance(d, dict) else d.get("kind"), "a fit_markov record")
        pf = None if d.get("private") is None else PrivateFit.from_dict(d["private"])
        # a ledger entry's record of an exact fit has no counts (a keyed digest instead:
        # puffer.publish.release.fit_record); a private fit's noised counts are its release
        c = np.asarray(d["counts"], dtype=np.int64 if pf is None else np.float64) if "counts" in d else \
            np.zeros(0, dtype=np.int64)
        nan = np.full(c.shape, np.nan)
        return cls(d["method"], float(d["level"]), int(d["T"]), d["period"], float(d["prior"]), int(d["n_boot"]),
                   d["seed"], int(d["min_count"]), list(d["states"]), list(d["values"]), list(d["groups"]),
                   d["init"], c, nan, nan, nan, float(d["entry_level"]),
                   -1 if d["n_units"] is None else int(d["n_units"]), -1 if d["n_records"] is None else int(d["n_records"]),
                   d["digest"], tuple(d["warnings"]), tuple(d["priors"]), d.get("column"),
                   int(d.get("phase_offset", 0)), pf)


def fit_markov(traces: Any, *, T: int, period: int | None = None, groups: Any = None, level: float = 0.95,
               method: str | None = None, states: Sequence[Any] | None = None, values: Any = None,
               columns: Sequence[str] = ("unit", "order", "state"), prior: float = 0.5, n_boot: int = 1000,
               seed: int | None = None, min_count: int = 20, init: Any = "stationary",
               threads: int = 0, phase_offset: int | None = None, check_layout: bool = True,
               progress: Any = None, private: float | None = None, clip: float | None = None
               ) -> MarkovChainFramework:
    """A Markov-chain framework whose Theta is fitted from traces (see the module docstring).

    Parameters
    ----------
    traces : array, DataFrame, pyarrow Table or path
        Records (unit, order, state): a 2-D array (units x orders; NaN / masked = missing),
        a pandas DataFrame, a pyarrow Table or a Parquet / CSV path (``columns`` names them).
        Transitions are counted between consecutive orders of a unit; the phase of a record is
        (order - ``phase_offset``) mod ``period`` (arrays: the column index).
    T : int
        The length of the released chain (e.g. 336 half-hours for a week); it starts at phase 0.
    period : int, optional
        P for per-phase matrices (e.g. 48: time of day); None: one matrix per group. At most
        ``T`` (a longer period has phases the released chain never reaches).
    phase_offset : int, optional
        With ``period``: the order of a record at phase 0 (e.g. 1980 for calendar years with
        1980 at phase 0). Without it, the smallest order must be a multiple of ``period``
        (order 0 is phase 0): orders such as calendar years would rotate every phase silently.
    groups : column name or labels, optional
        A column (tables) or labels per unit / per record (arrays); each group gets its own
        matrices, and Theta is the union of the groups' sets.
    level : float
        The probability that the box holds the true matrices (simultaneously for all rows): a
        posterior probability for ``"dirichlet"`` (given the counts, under the prior
        Dir(``prior``) per row), an approximate frequentist coverage for ``"bootstrap"`` (see
        the module docstring).
    method : str, optional
        ``"bootstrap"`` (units resampled ``n_boot`` times, ``seed``; the default) or
        ``"dirichlet"`` (posterior Dir(counts + ``prior``); the only one with ``private``).
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
    check_layout : bool
        Refuse an array that looks transposed (orders x units; see :func:`read_traces`).
    progress : None, bool or callable
        As for calibrations: None shows a bar once the fit has run a second (a line every 5 s
        into a pipe), True always, False never, or ``f(done, total)``.
    private : float, optional
        EPS: fit on counts released under EPS-DP per unit (the fit is a release of the traces
        too): each unit's transitions are clipped to ``clip`` (a unit with n > clip transitions
        counts each with weight clip / n), the counts get rounded Laplace lattice noise of scale
        2 clip / EPS (secure mode: the L1 distance between two units' clipped counts is at most
        2 clip, so EPS-DP under the replacement of a unit's traces), and the Dirichlet box is
        widened for the noise: half of 1 - ``level`` bounds the noise of every cell (Laplace
        tails, union bound), the other half the posterior box of the worst counts within that
        bound. The states must be given (``states=``: read from the data they would reveal
        which states occur) and ``groups`` are not supported. Recorded in
        ``fw.fit.private`` (the eps) and ``fw.fit.private_fit``; a release with the framework
        counts it in the units' total. EPS is per unit of the traces (the unit column of a
        table, a row of an array): a release naming another unit column is refused unless
        ``allow_fit_on_release`` (one released unit may hold several of the fit's units).
    clip : float, optional
        With ``private``: the transitions a unit contributes at most (default T - 1).

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

    from .._progress import resolve

    eps_fit: float | None = None
    if private is not None:
        eps_fit = V.positive("private", private)
        if method == "bootstrap":
            raise ParameterError("method", method, "'dirichlet' (or None) with private=: resampling units needs "
                                 "their exact counts")
        method = "dirichlet"
        if states is None:
            raise ParameterError("states", None, "the states in order with private=: read from the traces, the set "
                                 "of states that occur would itself be released without noise")
        if groups is not None:
            raise ParameterError("groups", "given with private=", "None: a private fit has one group (the group "
                                 "labels would be read from the data)")
    elif clip is not None:
        raise ParameterError("clip", clip, "None without private= (clip bounds each unit's transitions in a "
                             "private fit)")
    method = "bootstrap" if method is None else method
    if method not in _METHODS:
        raise ParameterError("method", method, "'bootstrap' or 'dirichlet'")
    lev = V.real("level", level, lo=0.0, hi=1.0, lo_open=True, hi_open=True, expected="a probability in (0, 1)")
    T = V.integer("T", T, lo=1, hi=100_000)
    cl = None if eps_fit is None else (float(max(T - 1, 1)) if clip is None else V.positive("clip", clip))
    P = None if period is None else V.integer("period", period, lo=1, hi=100_000)
    if P is not None and P > T:
        raise ParameterError("period", P, f"at most T = {T}: the released chain of {T} records steps through "
                             f"phases 0 .. {max(T - 2, 0)} only (is T the length of the release, e.g. 336 "
                             "half-hours for a week, and period that of the cycle, e.g. 48 for a day?)")
    if phase_offset is not None and P is None:
        raise ParameterError("phase_offset", phase_offset, "None without period= (phases need a period)")
    off = 0 if phase_offset is None else V.integer("phase_offset", phase_offset)
    a0 = V.positive("prior", prior)
    nb = V.integer("n_boot", n_boot, lo=2)
    mc = V.integer("min_count", min_count, lo=0)
    if method == "bootstrap" and seed is None:
        seed = _fresh_seed()   # recorded: the fit is reproducible
    sd = None if seed is None else V.integer("seed", seed, lo=0)
    cb = resolve(progress, label="fit_markov")
    total = (nb if method == "bootstrap" else 0) + 2
    if cb is not None:
        cb(0, total)
    tr = read_traces(traces, columns=columns, groups=groups, states=states, check_layout=check_layout)
    if len(tr.state_labels) < 2:
        raise ParameterError("traces", tr.state_labels, "at least two distinct states")
    if len(tr.state_labels) > 64:
        where = "" if tr.columns is None else (f" (column {tr.columns[2]!r}; are columns=(unit, order, state) = "
                                               f"{tr.columns} in that order?)")
        raise ParameterError("traces", f"{len(tr.state_labels)} distinct states{where}",
                             "at most 64 states (the chain's limit)")
    if P is not None and phase_offset is None and int(tr.order.min()) % P != 0:
        o0 = int(tr.order.min())
        raise ParameterError("traces", f"orders starting at {o0}", f"orders starting at a multiple of period = {P} "
                             f"(order 0 is phase 0; {o0} would be phase {o0 % P}), or phase_offset=ORDER naming the "
                             f"order at phase 0 (e.g. phase_offset={o0} if the first order starts the cycle)")
    counts, exact_per_unit = transition_counts(tr, P, off)
    per_unit: np.ndarray | None = exact_per_unit
    pf = None
    if eps_fit is not None:
        assert cl is not None
        counts, pf = _private_counts(exact_per_unit, eps_fit, cl, lev, None if tr.columns is None else tr.columns[0])
        per_unit = None                       # nothing exact goes further
    if cb is not None:
        cb(1, total)
    meta = _Meta(tr.state_labels, tr.group_labels, len(tr.unit_labels), int(tr.unit.size), tr.digest(),
                 None if tr.columns is None else tr.columns[2], off,
                 None if tr.columns is None else tuple(tr.unit_labels))
    return _build(meta, counts, per_unit, T=T, P=P, lev=lev, method=method, a0=a0, nb=nb, mc=mc, seed=sd,
                  values=values, init=init, threads=threads, report=cb, pf=pf)


@dataclass(frozen=True)
class _Meta:
    """What a fit needs of the traces besides the counts."""

    state_labels: list[Any]
    group_labels: list[Any]
    n_units: int
    n_records: int
    digest: str
    column: str | None = None
    phase_offset: int = 0
    unit_ids: tuple[Any, ...] | None = None


def _build(tr: _Meta, counts: np.ndarray, per_unit: np.ndarray | None, *, T: int, P: int | None, lev: float,
           method: str, a0: float, nb: int, mc: int, seed: int | None, values: Any, init: Any,
           threads: int, report: Any = None, pf: PrivateFit | None = None) -> MarkovChainFramework:
    """The framework and its record from the counts (G, P, k, k) (and, for the bootstrap, the
    per-unit counts)."""
    from . import markov_chain

    k = len(tr.state_labels)
    G, Pn = counts.shape[0], counts.shape[1]
    if pf is None and counts.sum() == 0:
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
    if pf is not None:     # half of the miss probability for the noise, half for the posterior box
        lev_e = _levels(1.0 - (1.0 - lev) / 2.0, rows, k)
        est, lo, hi = _private_box(counts.astype(np.float64), a0, lev_e, pf.tail)
    elif method == "dirichlet":
        est, lo, hi = _dirichlet_box(counts.astype(np.float64), a0, lev_e)
    else:
        if tr.n_units < 2:
            raise ParameterError("traces", f"{tr.n_units} unit", "at least two units to resample "
                                 "(or method='dirichlet'; cut a long trace into units, e.g. days)")
        assert seed is not None and per_unit is not None
        est, lo, hi = _bootstrap_box(per_unit, a0, lev_e, nb, seed,
                                     None if report is None else (lambda d: report(1 + d, nb + 2)))
    lo = np.minimum(lo, est)
    hi = np.maximum(hi, est)
    warn: list[str] = []
    N = counts.sum(axis=-1)
    thin = np.argwhere(N < mc)
    if P is not None:   # only the phases the released chain steps through (0 .. T - 2)
        thin = thin[thin[:, 1] < max(T - 1, 1)]
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
                    counts, est, lo, hi, lev_e, tr.n_units, tr.n_records, tr.digest, tuple(warn), tuple(labels),
                    tr.column, tr.phase_offset, pf, tr.unit_ids)
    fw._set_fit(rec)
    if report is not None:
        total = (nb if method == "bootstrap" else 0) + 2
        report(total, total)
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
    if rec.private_fit is not None:
        if traces is not None:
            raise ParameterError("traces", "given for a private fit", "None: a private fit is rebuilt from its "
                                 "recorded noised counts (counting the traces again would be another release)")
        meta = _Meta(rec.states, rec.groups, rec.n_units, rec.n_records, rec.digest, rec.column, rec.phase_offset)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            return _build(meta, rec.counts, None, pf=rec.private_fit, **kw)
    if traces is None:
        if rec.method != "dirichlet":
            raise ParameterError("traces", None, "the traces of a bootstrap fit (its box depends on the units)")
        if rec.counts.size == 0:
            raise ParameterError("traces", None, "the traces of the fit: the record has no transition counts (a "
                                 "ledger entry records a keyed digest of them, never the counts)")
        meta = _Meta(rec.states, rec.groups, rec.n_units, rec.n_records, rec.digest, rec.column, rec.phase_offset)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)    # recorded in the rebuilt record as before
            return _build(meta, rec.counts, None, **kw)
    tr = read_traces(traces, columns=columns, groups=groups, states=rec.states, check_layout=False)
    if tr.digest() != rec.digest:
        raise ParameterError("traces", tr.digest(), f"the traces of the recorded fit (digest {rec.digest})")
    counts, per_unit = transition_counts(tr, rec.period, rec.phase_offset)
    meta = _Meta(tr.state_labels, tr.group_labels, len(tr.unit_labels), int(tr.unit.size), tr.digest(), rec.column,
                 rec.phase_offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return _build(meta, counts, per_unit, **kw)
