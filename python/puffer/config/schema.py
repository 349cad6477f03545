"""The framework file schema and its strict validation.

A file is a table with these keys (TOML shown; JSON has the same structure)::

    name = "household activity"        # optional
    [model]                            # required
    kind = "markov_chain"              # markov_chain | fit_markov | independent_users
                                       # | correlated_pair | joint_counts | conditionals
    ...                                # the keys of that kind (below)
    [target]                           # required: no default privacy parameters
    eps = 1.0                          # required, > 0
    delta = 1e-5                       # optional, in (0, 1): adds the (eps, delta) rows
    alpha = 2.0                        # optional, > 1: adds the (alpha, eps)-RPP row
    [release]                          # optional
    values = [31.0, 18.0]              # finite numbers to release with noise
    seed = 2026                        # optional integer

Model keys by kind:

* markov_chain: ``T`` (int >= 1) and either ``trans`` (a k x k matrix or a list of them, one per
  prior) or ``grid`` (``stay_away``, ``stay_home``: lists of probabilities, a 2-state prior per
  pair); optional ``init`` ("stationary" or a probability vector), ``values`` (the state values),
  ``labels`` (one per prior), ``normalize`` (a row-sum tolerance, at most 0.01: rows of matrices
  estimated from data and rounded, within it of 1, are divided by their sum; recorded in the
  framework), ``period`` (an integer P >= 1: ``trans`` is one period of P matrices per prior,
  the step X_t -> X_(t+1) using matrix t mod P; without it, a list of T - 1 matrices per prior is
  a matrix per step).
* fit_markov: Theta fitted from traces (:func:`puffer.models.fit_markov`): ``data`` (a Parquet or
  CSV file of records, relative to the description's folder), ``T``; optional ``period``,
  ``columns`` ([unit, order, state] column names), ``groups`` (a column name), ``level``,
  ``method`` ("bootstrap" or "dirichlet"), ``states``, ``values``, ``prior``, ``n_boot``,
  ``seed``, ``min_count``, ``init``, ``phase_offset`` (the order at phase 0), ``private`` (the
  fit's eps: a private fit, counted in the units' totals) and ``clip``. The fit is printed by
  ``puffer run`` and stored in the ledger entries of releases made with it.
* independent_users: ``p`` (list of probabilities), optional ``users``.
* correlated_pair: optional ``p`` (default 0.5), ``rho`` (default 0.3).
* joint_counts: ``counts``, ``secrets``, ``x_values``, optional ``pairs``.
* conditionals: ``conditionals`` ({prior: {secret: {atoms, probs} or null}}), ``pairs``.
"""
from __future__ import annotations

import difflib
import json
import math
import numbers
import os
import sys
from typing import Any, cast

from ..errors import ParameterError, ParameterTypeError

__all__ = ["SCHEMA_DOC", "load_config", "validate_config"]

SCHEMA_DOC = __doc__

_TOP = {"name": False, "model": True, "target": True, "release": False}
_TARGET = {"eps": True, "delta": False, "alpha": False}
_RELEASE = {"values": True, "seed": False}
_MODEL = {
    "markov_chain": {"kind": True, "T": True, "trans": False, "grid": False, "init": False,
                     "values": False, "labels": False, "normalize": False, "period": False},
    "fit_markov": {"kind": True, "data": True, "T": True, "period": False, "columns": False, "groups": False,
                   "level": False, "method": False, "states": False, "values": False, "prior": False,
                   "n_boot": False, "seed": False, "min_count": False, "init": False, "phase_offset": False,
                   "private": False, "clip": False},
    "independent_users": {"kind": True, "p": True, "users": False},
    "correlated_pair": {"kind": True, "p": False, "rho": False},
    "joint_counts": {"kind": True, "counts": True, "secrets": True, "x_values": True, "pairs": False},
    "conditionals": {"kind": True, "conditionals": True, "pairs": True},
}
_GRID = {"stay_away": True, "stay_home": True}


def _keys(where: str, table: Any, allowed: dict[str, bool]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ParameterTypeError(where, table, "a table (TOML [section] / JSON object)")
    for k in table:
        if k not in allowed:
            close = difflib.get_close_matches(str(k), list(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ParameterError(f"{where}.{k}" if where else str(k), table[k],
                                 f"one of the keys {sorted(allowed)}{hint}")
    for k, req in allowed.items():
        if req and k not in table:
            raise ParameterError(f"{where}.{k}" if where else k, "<missing>",
                                 f"the required key {k!r} in {'[' + where + ']' if where else 'the file'}")
    return table


def _number(where: str, x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ParameterTypeError(where, x, "a number")
    v = float(x)
    if not math.isfinite(v):
        raise ParameterError(where, x, "a finite number")
    return v


def _int_key(model: dict[str, Any], key: str, lo: int) -> None:
    v = model.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
        raise ParameterError(f"model.{key}", v, f"an integer >= {lo}")


def _fit_keys(model: dict[str, Any]) -> None:
    """The fit_markov keys' types (their values are checked again by fit_markov)."""
    if not isinstance(model["data"], str) or not model["data"].endswith((".parquet", ".csv")):
        raise ParameterError("model.data", model["data"], "the path of a .parquet or .csv file of records")
    _int_key(model, "T", 1)
    for key, lo in (("period", 1), ("n_boot", 2), ("seed", 0), ("min_count", 0)):
        _int_key(model, key, lo)
    if "level" in model and not 0.0 < _number("model.level", model["level"]) < 1.0:
        raise ParameterError("model.level", model["level"], "a probability in (0, 1)")
    if "phase_offset" in model and (isinstance(model["phase_offset"], bool) or not isinstance(model["phase_offset"], int)):
        raise ParameterError("model.phase_offset", model["phase_offset"], "an integer (the order at phase 0)")
    for key in ("private", "clip"):
        if key in model and not _number(f"model.{key}", model[key]) > 0.0:
            raise ParameterError(f"model.{key}", model[key], "a number > 0")
    if "prior" in model and not _number("model.prior", model["prior"]) > 0.0:
        raise ParameterError("model.prior", model["prior"], "a pseudo-count > 0")
    if model.get("method", "bootstrap") not in ("bootstrap", "dirichlet"):
        raise ParameterError("model.method", model["method"], "'bootstrap' or 'dirichlet'")
    cols = model.get("columns", ["unit", "order", "state"])
    if not (isinstance(cols, list) and len(cols) == 3 and all(isinstance(c, str) for c in cols)):
        raise ParameterError("model.columns", cols, "three column names [unit, order, state]")
    if "groups" in model and not isinstance(model["groups"], str):
        raise ParameterTypeError("model.groups", model["groups"], "a column name")


def validate_config(cfg: Any) -> dict[str, Any]:
    """Check a parsed framework description against the schema; returns it unchanged.

    >>> validate_config({"model": {"kind": "correlated_pair"}, "target": {"epsilon": 0.1}})
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'target.epsilon' = 0.1: expected one of the keys ['alpha', 'delta', 'eps']; did you mean 'eps'?
    """
    _keys("", cfg, _TOP)
    if "name" in cfg and not isinstance(cfg["name"], str):
        raise ParameterTypeError("name", cfg["name"], "a string")
    model = cfg["model"]
    if not isinstance(model, dict):
        raise ParameterTypeError("model", model, "a table with a 'kind' key")
    kind = model.get("kind")
    if kind not in _MODEL:
        close = difflib.get_close_matches(str(kind), list(_MODEL), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ParameterError("model.kind", kind, f"one of {sorted(_MODEL)}{hint}")
    _keys("model", model, _MODEL[kind])
    if kind == "markov_chain":
        if ("trans" in model) == ("grid" in model):
            raise ParameterError("model.trans", "<both or neither of trans / grid>",
                                 "exactly one of 'trans' (matrices) or 'grid' (stay_away, stay_home)")
        if "grid" in model:
            _keys("model.grid", model["grid"], _GRID)
            for k in _GRID:
                vals = model["grid"][k]
                if not isinstance(vals, list) or not vals:
                    raise ParameterTypeError(f"model.grid.{k}", vals, "a non-empty list of probabilities")
                for i, v in enumerate(vals):
                    if not 0.0 <= _number(f"model.grid.{k}[{i}]", v) <= 1.0:
                        raise ParameterError(f"model.grid.{k}[{i}]", v, "a probability in [0, 1]")
        if "normalize" in model and not 0.0 < _number("model.normalize", model["normalize"]) <= 0.01:
            raise ParameterError("model.normalize", model["normalize"], "a row-sum tolerance in (0, 0.01]")
        if isinstance(model["T"], bool) or not isinstance(model["T"], int) or model["T"] < 1:
            raise ParameterError("model.T", model["T"], "an integer >= 1")
        per = model.get("period")
        if per is not None and (isinstance(per, bool) or not isinstance(per, int) or per < 1):
            raise ParameterError("model.period", per, "an integer >= 1 (matrices per period)")
        if per is not None and "grid" in model:
            raise ParameterError("model.period", per, "no period with 'grid' (a grid gives homogeneous priors)")
    if kind == "fit_markov":
        _fit_keys(model)
    target = _keys("target", cfg["target"], _TARGET)
    if _number("target.eps", target["eps"]) <= 0:
        raise ParameterError("target.eps", target["eps"], "eps > 0")
    if "delta" in target and not 0.0 < _number("target.delta", target["delta"]) < 1.0:
        raise ParameterError("target.delta", target["delta"], "delta in (0, 1)")
    if "alpha" in target and not _number("target.alpha", target["alpha"]) > 1.0:
        raise ParameterError("target.alpha", target["alpha"], "a Renyi order alpha > 1")
    if "release" in cfg:
        rel = _keys("release", cfg["release"], _RELEASE)
        if not isinstance(rel["values"], list) or not rel["values"]:
            raise ParameterTypeError("release.values", rel["values"], "a non-empty list of numbers")
        for i, v in enumerate(rel["values"]):
            _number(f"release.values[{i}]", v)
        seed = rel.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ParameterError("release.seed", seed, "an integer >= 0")
    return cast("dict[str, Any]", cfg)  # checked by _keys above


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a ``.toml`` or ``.json`` framework description.

    Missing files, syntax errors (with line and column) and schema violations raise
    :class:`~puffer.ParameterError` naming the file.
    """
    p = os.fspath(path)
    if not (p.endswith(".toml") or p.endswith(".json")):
        raise ParameterError("file", p, "a .toml or .json framework description")
    try:
        with open(p, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ParameterError("file", p, f"a readable file ({exc.strerror})") from None
    if p.endswith(".toml"):
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # Python 3.10
            import tomli as tomllib
        try:
            cfg = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ParameterError("file", p, f"valid TOML ({exc})") from None
    else:
        try:
            cfg = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ParameterError("file", p, f"valid JSON ({exc})") from None
    cfg = validate_config(cfg)
    m = cfg["model"]
    if m["kind"] == "fit_markov":
        given = m["data"]
        if not os.path.isabs(given):
            m["data"] = os.path.join(os.path.dirname(p), given)   # relative to the description's folder
        if not os.path.isfile(m["data"]):
            folder = os.path.abspath(os.path.dirname(p) or os.curdir)
            where = "" if os.path.isabs(given) else f" (relative paths are resolved against the description's folder {folder})"
            raise ParameterError("model.data", given, f"an existing Parquet or CSV file: {os.path.abspath(m['data'])} "
                                 f"does not exist{where}")
    return cfg


#: The framework of ``puffer demo`` (and the default of :func:`puffer.plot.demo_figures`).
DEMO = {
    "name": "household activity: 2-state Markov chain (away/home), T = 48 half-hours, 8 x 8 prior grid",
    "model": {"kind": "markov_chain", "T": 48,
              "grid": {"stay_away": [0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95],
                       "stay_home": [0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95]}},
    "target": {"eps": 1.0, "delta": 1e-5, "alpha": 2.0},
    "release": {"values": [31.0, 18.0, 40.0, 27.0, 35.0]},  # fresh OS entropy: no guessable seed
}
