"""What a release is, as one object: :class:`PublishOptions`, taken by every engine.

The file engine (:func:`puffer.io.noise_file`, ``puffer noise``), Spark
(:func:`puffer.spark.add_noise`) and Dask (:func:`puffer.dask.add_noise`) take the same options,
either as one object (``options=PublishOptions(...)``) or as keywords of the same names (both
at once is allowed for different fields; a field given twice, or a keyword that is not a field,
is an error). The options say *what* is published and recorded (key, ledger, privacy unit,
composition rules, secure mode, ...); how an engine reads and writes (batch sizes, threads,
row ids, compression) stays in that engine's own keywords.

>>> from puffer.publish import PublishOptions
>>> o = PublishOptions(unit="household", order="t")
>>> o.replace(budget=2.0).budget, o.unit
(2.0, 'household')
>>> PublishOptions.of(o, unit="hh")
Traceback (most recent call last):
...
puffer.errors.ParameterError: parameter 'unit' = 'hh': expected given once: it is set in options= and as a keyword
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import os
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError, ParameterTypeError
from ._files import shown_path

__all__ = ["PublishOptions", "NULLS"]

NULLS = ("error", "keep")


@dataclass(frozen=True)
class PublishOptions:
    """The options of one release (every engine; see the module docstring).

    ``key``: a key file written by ``puffer keygen``, the key's bytes, a :class:`puffer.io.Key`,
    or None for fresh OS entropy (the release then cannot be re-run); an integer ``seed`` is
    refused, ``insecure_seed`` is for tests and recorded as insecure.
    ``ledger``: the ledger file (default: ``puffer-ledger.jsonl`` beside a file output, in the
    working folder for Spark and Dask). ``signing_key``: an Ed25519 signing key file (``puffer
    keygen --signing PATH``) or :class:`~puffer.publish.signing.SigningKey`: every ledger entry
    and checkpoint of the release is signed (required for a ledger whose entries are signed).
    ``unit``/``order``/``per_unit``: the privacy unit (:mod:`puffer.publish.units`).
    ``rerun``: a release id of the ledger to reproduce (file engine).
    ``allow_uncomposed``/``budget``: the composition rules (:mod:`puffer.publish.totals`).
    ``allow_unnoised``: publish the values unnoised when the mechanism needs no noise.
    ``allow_fit_on_release``: release with a Theta fitted without ``private=`` on traces of
    units this release publishes (:func:`puffer.publish.release.fit_on_release`; recorded).
    ``new_units``: the release's unit ids include units never released into the ledger (its
    registry, :mod:`puffer.publish.registry`): declared, recorded and counted; without it such a
    release is refused (a re-spelled id would split the totals).
    Published values lie on a power-of-two lattice with exact noise drawn from the keyed stream
    (:mod:`puffer.lattice`; ``granularity``: the lattice step, a power of two, default from the
    sensitivity); ``secure``: the same lattice noise keyed by OS entropy (no key, not
    reproducible); ``float_noise``: keyed floating-point noise instead (not safe in floating
    point, Mironov 2012: only for noise families or mechanisms without a lattice law -- refused
    for Laplace and Gaussian noise, which have one; recorded in the ledger).
    ``select``: which mechanism of a framework file (default: the least noise, as ``puffer run``
    marks it; with lattice noise, the least noise among the mechanisms certified on a lattice).
    ``nulls``: "error" or "keep".
    ``series``/``window``: publish window ``window`` (counting from 0) of a planned series
    (:mod:`puffer.publish.series`): ``series`` is the plan file written by ``puffer series plan``
    (or :func:`~puffer.publish.series.write_plan`), or a loaded
    :class:`~puffer.publish.series.SeriesFile`; the noise is the plan's for that window, the
    ``order`` column holds positions of the plan's horizon, and the ledger counts the plan's
    guarantee once for all its windows. Both or neither.
    ``clamp``/``lattice``: post-processing of the noisy values (no privacy cost;
    :mod:`puffer.mechanisms.postprocess`): ``clamp=True`` clamps to the query's range from the
    framework (a Markov sum: [T min v, T max v]), ``clamp=(lo, hi)`` to a given range;
    ``lattice=True`` first rounds to the query's lattice (an integer-valued query). Recorded in
    the ledger entry's ``post_processing``.
    """

    key: Any = None
    ledger: str | os.PathLike[str] | None = None
    signing_key: Any = None
    unit: str | None = None
    order: str | None = None
    per_unit: bool = False
    rerun: str | None = None
    allow_uncomposed: bool = False
    budget: float | None = None
    allow_unnoised: bool = False
    secure: bool = False
    granularity: float | None = None
    float_noise: bool = False
    select: str | None = None
    nulls: str = "error"
    insecure_seed: int | None = None
    seed: Any = None
    clamp: Any = None
    lattice: bool = False
    new_units: bool = False
    series: Any = None
    window: int | None = None
    allow_fit_on_release: bool = False

    def __post_init__(self) -> None:
        for name in ("per_unit", "allow_uncomposed", "allow_unnoised", "secure", "float_noise", "lattice", "new_units",
                     "allow_fit_on_release"):
            v = getattr(self, name)
            if not isinstance(v, bool):
                raise ParameterTypeError(name, v, "True or False")
        for name in ("unit", "order"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise ParameterTypeError(name, v, "a column name or None")
        if self.nulls not in NULLS:
            raise ParameterError("nulls", self.nulls, f"one of {NULLS}")
        if self.float_noise and self.secure:
            raise ParameterError("float_noise", True, "False with secure=True (secure mode is lattice noise)")
        if self.float_noise and self.granularity is not None:
            raise ParameterError("granularity", self.granularity, "None with float_noise=True (no lattice)")
        if self.rerun is not None and not isinstance(self.rerun, str):
            raise ParameterTypeError("rerun", self.rerun, "a release id from the ledger")
        if self.ledger is not None and not isinstance(self.ledger, (str, os.PathLike)):
            raise ParameterTypeError("ledger", self.ledger, "a ledger file path (None: the engine's default); every "
                                     "release is recorded")
        if self.clamp is not None and not isinstance(self.clamp, bool):
            from ..mechanisms.postprocess import _range
            object.__setattr__(self, "clamp", _range(self.clamp))
        if (self.series is None) != (self.window is None):
            raise ParameterError("window" if self.window is None else "series",
                                 self.window if self.window is not None else self.series,
                                 "given together: series= (the plan file) and window= (which of its windows)")
        if self.window is not None and (isinstance(self.window, bool) or not isinstance(self.window, numbers.Integral)
                                        or int(self.window) < 0):
            raise ParameterError("window", self.window, "a window index of the series plan, an integer >= 0")
        if self.series is not None and not isinstance(self.series, (str, os.PathLike)) \
                and type(self.series).__name__ != "SeriesFile":
            raise ParameterTypeError("series", self.series, "a series plan file (`puffer series plan`) or a "
                                     "puffer.publish.series.SeriesFile")
        if self.budget is not None:
            b = self.budget
            if isinstance(b, bool) or not isinstance(b, numbers.Real) or not math.isfinite(float(b)) or b <= 0:
                raise ParameterError("budget", b, "a finite eps budget > 0")

    def __repr__(self) -> str:
        # only the fields that differ from the defaults (a key's bytes or text are never shown)
        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not f.default and v != f.default:
                if isinstance(v, (bytes, bytearray, memoryview)):
                    shown = "<bytes>"
                elif f.name in ("key", "signing_key") and isinstance(v, (str, os.PathLike)):
                    shown = repr(shown_path(os.fspath(v)))  # key material given as a path is not shown
                else:
                    shown = repr(v)
                parts.append(f"{f.name}={shown}")
        return f"PublishOptions({', '.join(parts)})"

    def replace(self, **changes: Any) -> PublishOptions:
        """A copy with ``changes`` (validated as the constructor validates)."""
        _check_names(changes, "PublishOptions.replace")
        return dataclasses.replace(self, **changes)

    @classmethod
    def of(cls, options: PublishOptions | None = None, /, **keywords: Any) -> PublishOptions:
        """``options`` with the keyword fields added: what an engine's ``options=`` and ``**keywords``
        stand for together. A field set in both, or a keyword that is no field, is an error."""
        if options is None:
            _check_names(keywords, "the publishing options")
            return cls(**keywords)
        if not isinstance(options, PublishOptions):
            raise ParameterTypeError("options", options, "a puffer.publish.PublishOptions or None")
        _check_names(keywords, "the publishing options")
        for name, v in keywords.items():
            default = next(f.default for f in dataclasses.fields(cls) if f.name == name)
            old = getattr(options, name)
            if old is not default and old != default:
                shown = "<key>" if name in ("key", "signing_key") else v
                raise ParameterError(name, shown, "given once: it is set in options= and as a keyword")
        return dataclasses.replace(options, **keywords) if keywords else options


_FIELDS = frozenset(f.name for f in dataclasses.fields(PublishOptions))


def _check_names(keywords: dict[str, Any], where: str) -> None:
    bad = sorted(set(keywords) - _FIELDS)
    if bad:
        # the value is not shown: it may be key material given under a misspelt name
        raise ParameterTypeError(bad[0], f"<a {type(keywords[bad[0]]).__name__}>",
                                 f"a field of {where}: one of {sorted(_FIELDS)}")
