"""Discrete laws on R or R^d: the conditional query laws mu_i^theta = P(f(X) | s_i, theta).

``DiscreteDist`` is immutable. It validates its input, merges duplicate atoms, drops atoms
of zero mass and keeps 1-D atoms sorted. Masses are float64; with ``exact=True`` (or when
masses are given as ``fractions.Fraction``/``int``/``"p/q"`` strings) the law also keeps them
exactly, as integer numerators over one common denominator, so transport plans and
privacy-loss checks can run in exact rational arithmetic (Ding 2022).

Mass tolerance: float masses must sum to 1 within ``tol`` (default ``1e-9``, absolute);
they are then stored as given (not renormalised) unless ``normalize=True``. Exact masses
must sum to exactly 1 unless ``normalize=True``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import reduce
from typing import Any

import numpy as np

from . import _validate as V
from .errors import ParameterError, ParameterTypeError

__all__ = ["DiscreteDist", "SUM_TOL"]

SUM_TOL = 1e-9


def _as_fraction(name: str, p: Any) -> Fraction:
    if isinstance(p, bool):
        raise ParameterTypeError(name, p, "a probability (float, int, Fraction or 'p/q')")
    try:
        if isinstance(p, (float, np.floating)):
            if not math.isfinite(float(p)):
                raise ParameterError(name, p, "finite probabilities >= 0")
            f = Fraction(float(p))
        elif isinstance(p, (np.integer,)):
            f = Fraction(int(p))
        else:
            f = Fraction(p)
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        raise ParameterTypeError(name, p, "a probability (float, int, Fraction or 'p/q')") from exc
    if f < 0:
        raise ParameterError(name, p, "probabilities >= 0")
    return f


def _is_exact_input(probs: Any) -> bool:
    if isinstance(probs, np.ndarray):
        return probs.dtype == object
    try:
        return any(isinstance(p, (Fraction, str)) for p in probs)
    except TypeError:
        return False


class DiscreteDist:
    """A finitely supported law on R (atoms of shape (n,)) or R^d (atoms of shape (n, d)).

    Parameters
    ----------
    atoms : array_like, shape (n,) or (n, d)
        Support points; finite.
    probs : array_like, shape (n,)
        Masses, finite and >= 0, summing to 1 within ``tol`` (floats) or exactly (exact mode).
    normalize : bool
        Divide the masses by their sum instead of requiring it to be 1.
    tol : float
        Allowed absolute deviation of the float mass sum from 1.
    exact : bool or None
        Keep masses as exact rationals. ``None`` (default) turns it on when masses are given
        as ``Fraction``, ``int`` objects in an object array, or ``"p/q"`` strings.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> d = DiscreteDist([2, 0, 2, 1], [0.25, 0.25, 0.25, 0.25])
    >>> d.atoms, d.probs
    (array([0., 1., 2.]), array([0.25, 0.25, 0.5 ]))
    >>> d.cdf(1.0), d.quantile(0.6)
    (0.5, 2.0)
    >>> DiscreteDist([0, 1], [F(1, 3), F(2, 3)]).exact_probs
    (Fraction(1, 3), Fraction(2, 3))
    """

    __slots__ = ("_atoms", "_probs", "_num", "_den", "_cum")
    _atoms: np.ndarray
    _probs: np.ndarray
    _num: tuple[int, ...] | None   # exact masses over _den (exact mode), else None
    _den: int | None
    _cum: np.ndarray | None        # cumulative levels, computed on first use

    def __init__(self, atoms: Any, probs: Any, *, normalize: bool = False,
                 tol: float = SUM_TOL, exact: bool | None = None):
        tol = V.real("tol", tol, lo=0.0, hi=1.0, expected="a tolerance in [0, 1]")
        normalize = V.boolean("normalize", normalize)
        if exact is not None:
            exact = V.boolean("exact", exact)
        a = V.float_array("atoms", atoms, ndim=(1, 2))
        if a.ndim == 2 and a.shape[1] == 0:
            raise ParameterError("atoms", f"array of shape {a.shape}", "at least one coordinate")
        if exact is None:
            exact = _is_exact_input(probs)
        if exact:
            try:
                seq = list(np.asarray(probs, dtype=object).ravel()) if not isinstance(probs, (list, tuple)) else list(probs)
            except TypeError as exc:
                raise ParameterTypeError("probs", probs, "a sequence of probabilities") from exc
            fr = [_as_fraction("probs", p) for p in seq]
            p = np.array([float(f) for f in fr], dtype=np.float64)
        else:
            p = V.float_array("probs", probs, ndim=1, allow_empty=True)
            if (p < 0).any():
                i = int(np.argmax(p < 0))
                raise ParameterError("probs", f"{p[i]!r} at index {i}", "probabilities >= 0")
            fr = None
        if p.shape[0] != a.shape[0]:
            raise ParameterError("probs", f"length {p.shape[0]}",
                                 f"one mass per atom (atoms has {a.shape[0]})")
        # Merge duplicates and sort (lexicographically in R^d); drop zero masses.
        uniq, inv = np.unique(a, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        merged = np.bincount(inv, weights=p, minlength=uniq.shape[0])
        if fr is not None:
            mf = [Fraction(0)] * uniq.shape[0]
            for k, f in zip(inv.tolist(), fr):
                mf[k] += f
            ftotal = sum(mf, Fraction(0))
            if ftotal == 0:
                raise ParameterError("probs", "all zero", "masses with a positive sum")
            if normalize:
                mf = [f / ftotal for f in mf]
            elif ftotal != 1:
                raise ParameterError("probs", f"exact sum {ftotal}",
                                     "exact masses summing to 1 (or normalize=True)")
            keep = np.array([f > 0 for f in mf], dtype=bool)
            mf = [f for f, k in zip(mf, keep) if k]
            den = reduce(lambda x, y: x * y // math.gcd(x, y), (f.denominator for f in mf), 1)
            self._num = tuple(f.numerator * (den // f.denominator) for f in mf)
            self._den = den
            merged = np.array([float(f) for f in mf], dtype=np.float64)
            uniq = uniq[keep]
        else:
            total = float(np.sum(p))  # sum of the inputs, before merging
            if not math.isfinite(total) or total <= 0:
                raise ParameterError("probs", f"sum {total!r}", "masses with a positive finite sum")
            if normalize:
                merged = np.asarray(merged / total, dtype=np.float64)
            elif abs(total - 1.0) > tol:
                raise ParameterError("probs", f"sum {total!r}",
                                     f"masses summing to 1 within tol={tol} (or normalize=True)")
            keep = merged > 0
            merged = merged[keep]
            uniq = uniq[keep]
            self._num = None
            self._den = None
        uniq = np.ascontiguousarray(uniq, dtype=np.float64)
        merged = np.ascontiguousarray(merged, dtype=np.float64)
        uniq.flags.writeable = False
        merged.flags.writeable = False
        self._atoms = uniq
        self._probs = merged
        self._cum = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def point_mass(cls, x: Any) -> DiscreteDist:
        """The Dirac law at x (a number or a point of R^d); exact."""
        arr = np.asarray(x, dtype=np.float64)
        return cls(arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(1), [Fraction(1)])

    @classmethod
    def from_counts(cls, atoms: Any, counts: Sequence[int]) -> DiscreteDist:
        """Exact law with masses counts / sum(counts) (integer counts, e.g. a contingency table row)."""
        cs = [V.integer("counts", c, lo=0) for c in counts]
        total = sum(cs)
        if total == 0:
            raise ParameterError("counts", counts, "non-negative counts with a positive sum")
        return cls(atoms, [Fraction(c, total) for c in cs])

    @classmethod
    def from_samples(cls, samples: Any) -> DiscreteDist:
        """Empirical law of the given samples (exact masses k/n)."""
        s = V.float_array("samples", samples, ndim=(1, 2))
        return cls(s, [Fraction(1, s.shape[0])] * s.shape[0])

    # ------------------------------------------------------------------ properties
    @property
    def atoms(self) -> np.ndarray:
        """Support points, sorted, read-only; shape (n,) in 1-D, (n, d) otherwise."""
        return self._atoms

    @property
    def probs(self) -> np.ndarray:
        """Masses as float64 (read-only). In exact mode, the nearest doubles of the exact masses."""
        return self._probs

    @property
    def dim(self) -> int:
        """Dimension d of the space (1 for laws on R)."""
        return 1 if self._atoms.ndim == 1 else int(self._atoms.shape[1])

    @property
    def is_exact(self) -> bool:
        return self._num is not None

    @property
    def exact_probs(self) -> tuple[Fraction, ...]:
        """Masses as Fractions (exact mode), else the exact rational values of the float masses."""
        if self._num is not None:
            return tuple(Fraction(n, self._den) for n in self._num)
        return tuple(Fraction(float(p)) for p in self._probs)

    @property
    def numerators(self) -> tuple[int, ...] | None:
        """Exact masses as integers over :attr:`denominator` (None unless exact)."""
        return self._num

    @property
    def denominator(self) -> int | None:
        return self._den

    def __len__(self) -> int:
        return int(self._atoms.shape[0])

    # ------------------------------------------------------------------ 1-D functionals
    def _require_1d(self, what: str) -> None:
        if self._atoms.ndim != 1:
            raise ParameterError("self", f"a law on R^{self.dim}", f"a law on R for {what}")

    def _cumprobs(self) -> np.ndarray:
        if self._cum is None:
            if self._num is not None:
                acc, out = 0, []
                for n in self._num:
                    acc += n
                    out.append(float(Fraction(acc, self._den)))
                c = np.array(out)
            else:
                c = np.cumsum(self._probs)
                c /= c[-1]  # the last value is exactly 1: quantile(1) is the top atom
            c[-1] = 1.0
            c.flags.writeable = False
            self._cum = c
        return self._cum

    def cdf(self, x: Any) -> Any:
        """F(x) = P(X <= x), vectorised over x (1-D laws)."""
        self._require_1d("cdf")
        xs = np.asarray(x, dtype=np.float64)
        if np.isnan(xs).any():
            raise ParameterError("x", x, "points without NaN")
        idx = np.searchsorted(self._atoms, xs, side="right")
        c = np.concatenate(([0.0], self._cumprobs()))
        out = c[idx]
        return float(out) if out.ndim == 0 else out

    def quantile(self, u: Any) -> Any:
        """Generalised inverse F^{-1}(u) = inf{x : F(x) >= u} for u in (0, 1] (u = 0 gives the
        lowest atom). Vectorised over u."""
        self._require_1d("quantile")
        us = np.asarray(u, dtype=np.float64)
        if np.isnan(us).any() or (us < 0).any() or (us > 1).any():
            raise ParameterError("u", u, "levels in [0, 1]")
        idx = np.searchsorted(self._cumprobs(), us, side="left")
        idx = np.minimum(idx, len(self) - 1)
        out = self._atoms[idx]
        return float(out) if out.ndim == 0 else out

    ppf = quantile

    def mean(self) -> Any:
        """Expectation (a float in 1-D, an array of shape (d,) otherwise)."""
        if self._num is not None and self._atoms.ndim == 1:
            s = sum(Fraction(float(a)) * n for a, n in zip(self._atoms, self._num))
            return float(s / int(self._den or 1))
        m = np.tensordot(self._probs, self._atoms, axes=(0, 0))
        return float(m) if np.ndim(m) == 0 else m

    def var(self) -> float:
        """Variance (1-D laws)."""
        self._require_1d("var")
        m = self.mean()
        return float(np.dot(self._probs, (self._atoms - m) ** 2))

    def support_diameter(self, norm: float = 2) -> float:
        """max ||x - y|| over atoms x, y (the support-diameter sensitivity of the DP baseline).
        ``norm``: an order p >= 1 or inf (every norm is |x - y| in 1-D, but it is checked)."""
        if isinstance(norm, str) and norm.lower() in ("inf", "infinity", "linf"):
            norm = math.inf
        norm = V.real("norm", norm, lo=1.0, allow_inf=True, expected="a norm order p >= 1 (inf allowed)")
        if self._atoms.ndim == 1:
            return float(self._atoms[-1] - self._atoms[0])
        a = self._atoms
        diffs = a[:, None, :] - a[None, :, :]
        return float(np.max(np.linalg.norm(diffs, ord=norm, axis=2)))

    def shift(self, v: Any) -> DiscreteDist:
        """Law of X + v."""
        vv = V.float_array("v", v, ndim=(0, 1))
        return DiscreteDist(self._atoms + vv, self.exact_probs if self.is_exact else self._probs)

    # ------------------------------------------------------------------ dunder
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DiscreteDist):
            return NotImplemented
        if self._atoms.shape != other._atoms.shape or not np.array_equal(self._atoms, other._atoms):
            return False
        if self.is_exact and other.is_exact:
            return self.exact_probs == other.exact_probs
        return bool(np.array_equal(self._probs, other._probs))

    def __hash__(self) -> int:
        return hash((self._atoms.tobytes(), self._probs.tobytes()))

    def __repr__(self) -> str:
        n = len(self)
        kind = "exact" if self.is_exact else "float"
        if n <= 6:
            if self.is_exact:
                ps = "[" + ", ".join(str(f) for f in self.exact_probs) + "]"
            else:
                ps = np.array2string(self._probs, precision=6, separator=", ")
            at = np.array2string(self._atoms, precision=6, separator=", ").replace("\n", "")
            return f"DiscreteDist(atoms={at}, probs={ps}, {kind})"
        return f"DiscreteDist(n={n}, dim={self.dim}, {kind}, support=[{self._atoms.min()}, {self._atoms.max()}])"

    def to_dict(self) -> dict:
        d = {"atoms": self._atoms.tolist()}
        if self.is_exact:
            d["probs"] = [str(f) for f in self.exact_probs]
        else:
            d["probs"] = self._probs.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> DiscreteDist:
        """The law :meth:`to_dict` wrote: a mapping with exactly the keys ``atoms`` and ``probs``.

        >>> DiscreteDist.from_dict({"atoms": [0.0, 1.0], "probs": ["1/3", "2/3"]}).exact_probs
        (Fraction(1, 3), Fraction(2, 3))
        """
        from collections.abc import Mapping

        if not isinstance(d, Mapping):
            raise ParameterTypeError("d", d, "a mapping {'atoms': [...], 'probs': [...]} (as to_dict writes)")
        keys = set(d)
        if keys != {"atoms", "probs"}:
            extra, missing = sorted(map(str, keys - {"atoms", "probs"})), sorted({"atoms", "probs"} - keys)
            raise ParameterError("d", sorted(map(str, keys)), "exactly the keys 'atoms' and 'probs'"
                                 + (f" (unknown: {', '.join(extra)})" if extra else "")
                                 + (f" (missing: {', '.join(missing)})" if missing else ""))
        return cls(d["atoms"], d["probs"])
