"""Row-addressed noise: what the file ETL, Spark and Dask paths share.

The noise added to row ``r`` of column ``c`` is value ``r`` of the Philox stream
:func:`column_stream` ``(seed, c)``, so it depends only on ``(seed, c, r)``: the output is
bitwise identical for any batch size, partitioning, worker count and thread count, and equal to
``puffer.add_noise(x, noise, rng=column_stream(seed, c))`` on the whole column ``x``.

A :class:`NoisePlan` is resolved once from what the user calls the *mechanism*:

* a calibrated :class:`puffer.mechanisms.Mechanism` (its noise, sensitivity and guarantee);
* a framework file (``.toml``/``.json``, the schema ``puffer run`` reads: see
  :mod:`puffer.config.schema`) or its parsed dict: the mechanisms ``puffer run`` lists are
  calibrated and the one named by ``select`` (a label, or a case-insensitive substring of exactly one)
  is used;
  by default the one ``puffer run`` marks and releases with, the least noise among the rows that
  give the file's target (:func:`puffer.mechanisms.best`);
* a plain noise: a noise family instance or a ``(kind, params)`` tuple such as
  ``("laplace", {"b": 2.0})`` (no calibration, so the ledger records no guarantee).

Dimension. A mechanism for a ``d``-dimensional query (``framework.dim == d > 1``) releases one
``d``-vector per row: exactly ``d`` columns must be given, they form the vector in the order
given, and every coordinate gets i.i.d. noise (as :meth:`Mechanism.release` adds it). A scalar
mechanism (``d == 1``) may be applied to several columns; each column is then a separate
release per row (the ledger says so: ``releases_per_row``) and the guarantees compose.

Lattice noise (the default; :mod:`puffer.lattice`): the values are snapped to a power-of-two
lattice and exact integer noise of a declared law is drawn from the keyed stream, calibrated per
row-vector (padding for ``d`` coordinates in the mechanism's norm, of the quantity the
mechanism's theorem scales with: :meth:`puffer.mechanisms.Mechanism.lattice_sensitivity`); a
plain noise gets a lattice from its scale (no padding: there is no guarantee to keep). Secure
mode (``secure=True``) is the same lattice noise keyed by OS entropy: nothing is reproducible.
"""
from __future__ import annotations

import hashlib
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..lattice import LatticePlan
    from ..sampling import Stream

__all__ = ["NoisePlan", "resolve", "column_stream", "add_rows", "draw_seed"]

_DOMAIN = b"puffer.io column stream v1\x00"


def _seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise ParameterTypeError("seed", seed, "a non-negative integer")
    s = int(seed)
    if s < 0 or s >= 1 << 256:
        raise ParameterError("seed", seed, "an integer in [0, 2^256)")
    return s


def draw_seed() -> int:
    """A fresh 128-bit seed from OS entropy (what ``seed=None`` means outside secure mode)."""
    return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]


def column_stream(seed: int, column: Any) -> Stream:
    """The Philox stream of column ``column`` under ``seed`` (position 0 = row 0).

    The key is a ``SeedSequence`` with entropy ``seed`` and a spawn key made of the first 128
    bits of sha256 of the column name, so columns get independent streams and renaming a
    column changes its noise.

    >>> import numpy as np, puffer
    >>> from puffer.io import column_stream
    >>> x = np.arange(6.0)
    >>> a = puffer.add_noise(x, ("laplace", {"b": 1.0}), rng=column_stream(7, "x"))
    >>> s = column_stream(7, "x"); s.position = 3   # rows 3.. of the same column
    >>> bool(np.array_equal(a[3:], puffer.add_noise(x[3:], ("laplace", {"b": 1.0}), rng=s)))
    True
    """
    from ..sampling import Stream

    name = str(column).encode("utf-8")
    words = np.frombuffer(hashlib.sha256(_DOMAIN + name).digest()[:16], dtype="<u4")
    return Stream(np.random.SeedSequence(entropy=_seed(seed), spawn_key=tuple(int(w) for w in words)))


@dataclass(frozen=True)
class NoisePlan:
    """The noise to add and where it came from (see the module docstring).

    ``kind``/``params``: the scalar sampler (None: no noise needed, zero sensitivity);
    ``dim``: the query dimension (columns per release); ``mechanism``: the calibrated mechanism
    or None for a plain noise; ``label``: which mechanism; ``source``: the file or "object"."""

    kind: str | None
    params: dict[str, Any]
    dim: int
    mechanism: Any = None
    label: str = ""
    source: str = "object"
    noise: Any = None
    _lattice: dict[float | None, LatticePlan] = field(default_factory=dict, repr=False, compare=False)

    @property
    def guarantee(self) -> Any:
        return None if self.mechanism is None else self.mechanism.guarantee

    def check_columns(self, columns: list[str]) -> None:
        """Columns must match the mechanism's dimension (see the module docstring)."""
        if self.dim > 1 and len(columns) != self.dim:
            raise ParameterError("columns", list(columns),
                                 f"exactly {self.dim} columns: the mechanism ({self.label}) releases a "
                                 f"{self.dim}-dimensional vector per row, one coordinate per column")

    def releases_per_row(self, n_columns: int) -> int:
        return 1 if self.dim > 1 else n_columns

    def for_workers(self, *, lattice: bool = False, granularity: float | None = None) -> NoisePlan:
        """A light copy to ship to Spark/Dask workers: the sampler, no mechanism object (the
        lattice plan, if needed, computed here on the driver)."""
        cache = {granularity: self.lattice_plan(granularity)} if lattice and self.kind is not None else {}
        return NoisePlan(self.kind, dict(self.params), self.dim, None, self.label, self.source, None, cache)

    def describe(self) -> dict[str, Any]:
        """JSON-able ledger fields: mechanism, framework digest, sensitivity (with witness),
        noise family and scale, guarantee."""
        from ..mechanisms._base import noise_description

        m = self.mechanism
        noise = None if self.noise is None else noise_description(self.noise)
        if noise is None and self.kind is not None:
            noise = {"family": self.kind, **self.params}
        if self.noise is not None:
            scale: float | None = float(getattr(self.noise, "scale", math.nan))
        elif self.kind is not None and len(self.params) == 1:  # a plain (kind, {param: scale}) noise
            scale = float(next(iter(self.params.values())))
        else:
            scale = None
        if scale is not None and not math.isfinite(scale):
            scale = None
        if m is None:
            return {"mechanism": None, "label": self.label, "source": self.source, "framework": None,
                    "sensitivity": None, "noise": noise, "scale": scale, "guarantee": None, "dim": self.dim}
        fit = getattr(m.framework, "fit", None)   # a Theta fitted from traces: how (puffer.models.fit_markov)
        return {"mechanism": type(m).__name__, "label": self.label, "source": self.source,
                "framework": None if m.framework is None else m.framework.digest(), "sensitivity": m.sensitivity.to_dict(), "noise": noise,
                "scale": scale, "guarantee": m.guarantee.to_dict(), "target": m.to_dict()["target"],
                "dim": self.dim, **({"fit": fit.to_dict()} if fit is not None else {})}

    def lattice_plan(self, granularity: float | None = None) -> LatticePlan:
        """The lattice plan of one row-vector of ``dim`` coordinates (see the module docstring):
        an error for a noise without a lattice law or a mechanism not certified on a lattice,
        naming ``float_noise`` as the way out."""
        from ..lattice import lattice_plan

        if granularity in self._lattice:
            return self._lattice[granularity]
        if self.kind not in ("laplace", "gaussian"):
            raise ParameterError("float_noise", False, f"True for {self.kind} noise: published noise lies on a "
                                 "lattice, and only Laplace and Gaussian noise have an exact lattice law here "
                                 "(float_noise=True / --float-noise publishes keyed floating-point noise instead, "
                                 "which is not safe in floating point)")
        if self.mechanism is None:  # a plain noise: a lattice from its scale, nothing to pad
            plan = lattice_plan((self.kind, self.params), self.dim, sensitivity=None, granularity=granularity,
                                norm="coordinate")
        else:
            try:   # the plan Mechanism.release(secure=True) draws: one row-vector, padded per theorem
                plan = self.mechanism.lattice_plan(granularity)
            except ParameterError as exc:
                if exc.param != "secure":
                    raise
                raise ParameterError("float_noise", False, f"True for {self.label}: {exc.expected} (or choose "
                                     "another mechanism)") from exc
        self._lattice[granularity] = plan
        return plan

    def secure_plan(self, granularity: float | None = None) -> LatticePlan:
        """The lattice plan of secure mode (a calibrated mechanism: there is a guarantee to keep)."""
        if self.mechanism is None and granularity not in self._lattice:
            raise ParameterError("secure", True, "a calibrated mechanism (framework file or Mechanism object), "
                                 "so the sensitivity the lattice padding needs is known")
        return self.lattice_plan(granularity)


def _scalar_spec(noise: Any, dim: int) -> tuple[str, dict[str, Any]]:
    from ..noise.product import IID
    from ..sampling import noise_spec

    if isinstance(noise, IID):
        if noise.d != dim:
            raise ParameterError("mechanism", repr(noise), f"i.i.d. noise of dimension {dim}")
        noise = noise.base
    spec = getattr(noise, "_sampler_spec", None)
    if not callable(spec) and not isinstance(noise, tuple):
        raise ParameterTypeError("mechanism", repr(noise), "a Mechanism, a Selection of puffer.mechanisms.best, a "
                                 "framework file or a plain noise, whose noise is i.i.d. per coordinate (Laplace, "
                                 "Gaussian, ... or their .iid(d)); K-norm noise is not row-separable")
    return noise_spec(noise)


def _from_mechanism(m: Any, label: str, source: str) -> NoisePlan:
    # a mechanism calibrated from a given sensitivity has no framework: its noise's dimension
    dim = int(m.framework.dim) if m.framework is not None else int(getattr(m.noise, "dim", 1))
    if m.noise is None:
        return NoisePlan(None, {}, dim, m, label, source, None)
    kind, params = _scalar_spec(m.noise, dim)
    base = getattr(m.noise, "base", m.noise)
    return NoisePlan(kind, params, dim, m, label, source, base)


def _lattice_refusal(m: Any) -> ParameterError | None:
    """Why mechanism ``m`` cannot be published on a lattice (None: it can)."""
    if m.noise is None:
        return None
    from ..errors import PufferError

    try:
        m.lattice_plan()
    except PufferError as exc:
        return ParameterError("float_noise", False, f"True for this mechanism on a lattice: "
                                                    f"{getattr(exc, 'expected', exc)}")
    return None


def resolve(mechanism: Any, *, select: str | None = None, lattice: bool = False) -> NoisePlan:
    """The :class:`NoisePlan` of a mechanism object, a framework file / dict or a plain noise.

    ``lattice``: the release is lattice noise, so the default choice among a framework file's
    mechanisms (``select=None``: the least noise meeting the target) is made among those that
    are certified on a lattice (:meth:`puffer.mechanisms.Mechanism.lattice_plan`).

    >>> from puffer.io import resolve
    >>> resolve(("gaussian", {"sigma": 2.0})).kind
    'gaussian'
    """
    from ..mechanisms._base import Mechanism
    from ..mechanisms.best import Selection
    from ..sampling import _params

    if isinstance(mechanism, NoisePlan):
        return mechanism
    if isinstance(mechanism, Selection):   # puffer.mechanisms.best(...): its chosen mechanism
        if select is not None:
            raise ParameterError("select", select, "None when a Selection is given (it has chosen its mechanism)")
        return _from_mechanism(mechanism.mechanism, mechanism.label, "object")
    if isinstance(mechanism, Mechanism):
        if select is not None:
            raise ParameterError("select", select, "None when a Mechanism object is given")
        return _from_mechanism(mechanism, type(mechanism).__name__, "object")
    if isinstance(mechanism, (str, os.PathLike, dict)):
        from ..config import build_framework, build_mechanisms, load_config, markov_quilt_mechanisms, validate_config

        if isinstance(mechanism, dict):
            cfg, source = validate_config(mechanism), "dict"
        else:
            cfg, source = load_config(mechanism), os.fspath(mechanism)
        if "release" in cfg:
            raise ParameterError("mechanism", source, "a framework file without a [release] table (the values "
                                 "to release come from the columns)")
        fw = build_framework(cfg["model"])
        todo = build_mechanisms(fw, cfg["target"]) + markov_quilt_mechanisms(fw, cfg["target"])
        labels = [lab for lab, _ in todo]
        if select is None:
            from ..mechanisms.best import calibrate_rows, selection_target
            from ..mechanisms.best import select as choose

            rows = calibrate_rows(todo)
            if all(isinstance(m, BaseException) for _, m in rows):
                raise rows[0][1]
            if lattice:   # a mechanism that is not certified on a lattice cannot be the default
                rows = [(lab, m if isinstance(m, BaseException) else (_lattice_refusal(m) or m)) for lab, m in rows]
            sel = choose(rows, selection_target(cfg["target"]))
            return _from_mechanism(sel.mechanism, sel.label, source)
        else:
            if not isinstance(select, str):
                raise ParameterTypeError("select", select, f"a string matching one of {labels}")
            hits = [(lab, mk) for lab, mk in todo if select.lower() == lab.lower()] or \
                [(lab, mk) for lab, mk in todo if select.lower() in lab.lower()]
            if len(hits) != 1:
                raise ParameterError("select", select, f"a substring of exactly one of {labels}")
            label, make = hits[0]
        return _from_mechanism(make(), label, source)
    if select is not None:
        raise ParameterError("select", select, "None for a plain noise")
    kind, params = _scalar_spec(mechanism, 1)
    _params(kind, params)  # validate now, not in a worker
    base = mechanism if not isinstance(mechanism, tuple) else None
    return NoisePlan(kind, params, 1, None, f"{kind} noise (uncalibrated)", "object", base)


def add_rows(plan: NoisePlan, values: NDArray[Any], stream: Any, rows: Any, *, valid: NDArray[np.bool_] | None = None,
             lattice: LatticePlan | None = None, threads: int | None = None, column: str = "",
             checked: bool = False) -> NDArray[np.floating[Any]]:
    """A new array: ``values`` (1-D float32/float64) plus the noise of rows ``rows``.

    ``rows`` is an int (the first row: the rows are consecutive) or an int64 array of row ids
    (the same length as ``values``; consecutive runs are filled in one call each). ``valid``:
    a boolean mask, False where the value is null (no noise is added there; the row still owns
    its stream position, so other rows are unaffected). ``lattice``: the lattice plan
    (:mod:`puffer.lattice`; ``stream`` must then be a keyed stream): float64 lattice points
    ``(round_half_even(x / g) + Z) g``; None: the floating-point samplers (float_noise).
    ``checked``: the values are known finite (:func:`puffer.publish.values.check_floats` ran).
    """
    from ..lattice import check_lattice_values
    from ..sampling import KINDS, _params, _threads

    src = np.asarray(values)
    # a fresh array with numpy's canonical dtype object: arrays unpickled in a worker carry an
    # equal but distinct dtype instance, which the core's binding refuses
    as32 = src.dtype == np.float32 and lattice is None   # lattice points are float64
    vals = np.empty(src.shape, dtype=np.float32 if as32 else np.float64)
    vals[...] = src
    n = vals.size
    if valid is not None:
        vals[~valid] = 0.0
    # two reductions (no temporary array; NaN propagates into both) before locating a bad value
    if n and not checked and not (np.isfinite(vals.min()) and np.isfinite(vals.max())):
        i = int(np.flatnonzero(~np.isfinite(vals))[0])
        where = rows + i if isinstance(rows, (int, np.integer)) else int(np.asarray(rows)[i])
        raise ParameterError(f"column {column!r}" if column else "values", f"{vals[i]} at row {where}",
                             "finite values (NaN and +-inf cannot be released)")
    if plan.kind is None or n == 0:
        return vals
    thr = _threads(threads)
    if lattice is not None:
        check_lattice_values(vals, lattice, f"column {column!r}" if column else "values")
    else:
        code, p0, p1 = _params(plan.kind, plan.params)
        assert KINDS[plan.kind][0] == code
    if isinstance(rows, (int, np.integer)):
        starts, lo = np.array([int(rows)], dtype=np.int64), np.array([0, n], dtype=np.int64)
    else:
        r = np.asarray(rows)
        if r.shape != (n,) or r.dtype.kind not in "iu":
            raise ParameterTypeError("row_id", f"array of dtype {r.dtype} and shape {r.shape}",
                                     f"{n} integer row ids")
        r = r.astype(np.int64, copy=False)
        if n and int(r.min()) < 0:
            raise ParameterError("row_id", int(r.min()), "row ids >= 0")
        cut = np.flatnonzero(np.diff(r) != 1) + 1
        lo = np.concatenate(([0], cut, [n])).astype(np.int64)
        starts = r[lo[:-1]]
    # one call per run of consecutive row ids; the core adds value (start + i) of the stream
    for j in range(starts.size):
        a, b = int(lo[j]), int(lo[j + 1])
        seg = vals[a:b]
        if lattice is not None:
            stream._lattice_add_at(lattice.law.code, lattice.law.S, lattice.g_exp, int(starts[j]), seg, seg, thr)
        else:
            stream._fill_at(code, p0, p1, int(starts[j]), seg, seg, thr)  # Stream or KeyedStream
    if valid is not None:
        vals[~valid] = 0.0
    return vals


def as_columns(columns: Any) -> list[str]:
    """A non-empty list of distinct column names (a single string is one column)."""
    if isinstance(columns, str):
        columns = [columns]
    if not isinstance(columns, (list, tuple)) or not columns or not all(isinstance(c, str) for c in columns):
        raise ParameterTypeError("columns", columns, "a column name or a non-empty list of column names")
    if len(set(columns)) != len(columns):
        raise ParameterError("columns", list(columns), "distinct column names")
    return list(columns)


def threads_arg(threads: Any) -> int | None:
    """A validated ``threads=`` (None or an integer >= 1)."""
    return None if threads is None else V.threads(threads, lo=1)
