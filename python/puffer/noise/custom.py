"""User-supplied noise: a vectorised log-density (the slower path of the Renyi kernel).

The noise is ``scale * Z`` where Z has log-density ``logpdf`` (a Python callable mapping a
float64 array to an array of the same shape). Divergences use the same certified log-space
quadrature as the built-in families (cpp/renyi), calling ``logpdf`` once per batch of 21
quadrature nodes (times two shifts). For a non-symmetric density the pointwise non-negative
form e^a (expm1((alpha-1)(a-b)) + (alpha-1) expm1(b-a)) >= 0 is integrated over the whole line
(a = log p(x - u), b = log p(x)); ``symmetric=True`` enables the folded sinh form.

Certification covers quadrature and rounding in the kernel; the accuracy of ``logpdf`` itself
is the user's responsibility. So does the density's *structure*: an adaptive quadrature's error
estimate cannot see a component it never sampled (a 30 % spike of width 1e-3 under a heavy
tail was under-reported 18x). Divergences therefore need the structure declared:
``breakpoints`` (modes, kinks, support edges, where the quadrature must split), ``spikes``
((location, width) of narrow components: split at location + width * {0, +-1, ..., +-64}),
or ``log_concave=True`` (one smooth mode); ``breakpoints=()`` states explicitly that the
density is smooth and has no narrow component. Without any declaration divergences are refused.

``log_lipschitz=L`` (without ``log_concave``) certifies divergences from L instead, whatever the
shape between the nodes: with a and s = a - b (a = log p(x - v), b = log p(x)) L- and
2L-Lipschitz, the integrand of J - 1 is bounded on each gap between two nodes from their values,
and the sum of these bounds over a window holding all but ~e^-40 of it is refined until it is
within 0.1 % (``LIPSCHITZ_RTOL``, relative in s_alpha) of the trapezoid rule's; what it returns is
that sum, an upper bound, not the estimate (Gauss-Kronrod alone returned 1.681 for the 1.745 of
e^{-|x|} (1 + 0.9 cos 20x) at alpha = 100, v = 0.05: it never sampled the comb's peaks). The cost
grows like L / (|v| rtol) for alpha near 1: where 2^20 nodes (``LIPSCHITZ_NODES``) do not reach
0.1 %, the sum as it stands is returned (a looser upper bound), capped by the bounds L alone
gives for every L-log-Lipschitz density: the two-point bound ~ alpha L^2 v^2 / 2 (below) and
D_inf <= L |v|. Inside R (the sup over the shift ball, whose Lipschitz bound between grid points
dominates its slack) the grid's divergences are certified to 1 % with at most 2^16 nodes. Still,
R and calibration from L alone cost seconds to minutes (hundreds of certificates). L is *your claim*: it is
checked at construction on a grid (2^15 points) and at every pair of neighbouring nodes of every
certificate; a violated claim is an error, never a warning (a claim too small where it is not
sampled cannot be detected: the certificate then holds for that claim, not for the density).
The tails beyond the window are integrated as above, so structure far from the mass (a second
component at distance 1e3) still needs ``breakpoints``.

Checks at construction: the callable returns finite (or -inf) values of the right shape, the
mass is 1 (within 1e-6), a claimed symmetry holds, and so does a claimed L on the grid.

R_alpha(zeta, z), the sup of s_alpha over the shift ball |v| <= z (Pierquin et al. 2024), is
certified only from a declared property, never from samples of s_alpha (a periodic density
fooled a monotonicity check on the grid z/8, 2z/8, ... by 34x):

* ``log_concave=True``: s_alpha(v) is non-decreasing in v on each side of 0, so R is the
  larger of s_alpha(+-z). Proof: a log-concave location family has a monotone likelihood
  ratio, so by Neyman-Pearson its optimal tests are thresholds and the trade-off curve of
  (zeta, zeta(. - v)) decreases pointwise in v >= 0; by Blackwell's theorem the pair at the
  larger shift is then more informative, and every Renyi divergence grows (data processing;
  Dong, Roth, Su 2022, f-DP, Sec. 2).
* ``log_lipschitz=L`` (|log p(x) - log p(y)| <= L |x - y|): p(x - v) <= p(x - w) e^{L |v - w|},
  so s_alpha(v) <= s_alpha(w) + alpha L |v - w| / (alpha - 1) and s_alpha(v) <= D_inf <= L |v|.
  R is bounded between the points of an adaptively refined grid of the ball; D_inf (alpha =
  inf, pure PP) is L z, and for small z the two-point bound (the chord of r^alpha over
  r in [e^-Lz, e^Lz]) ~ alpha L^2 z^2 / 2 keeps R tight.

Otherwise R (and calibration, and the GWM curve) is refused with an error naming both.
"""
from __future__ import annotations

import contextvars
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast, overload

import numpy as np

from .. import _validate as V
from .._core import renyi as _K
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import round_up
from ._base import NoiseFamily, _generic_max_shift, _is_scalar, _two_point_bound

if TYPE_CHECKING:
    from ._base import F64

__all__ = ["Custom"]

_MASS_TOL = 1e-6
#: relative accuracy (in s_alpha) of the divergences certified from log_lipschitz alone, and the
#: most nodes spent on one (a looser certified bound is returned when they do not reach it)
LIPSCHITZ_RTOL = 1e-3
LIPSCHITZ_NODES = 2 ** 20
# Inside R's sup over the shift ball the Lipschitz bound between grid points (~ alpha L h / (alpha - 1))
# dominates; its grid values are certified to 1 % with at most 2^16 nodes.
_R_CERT = (1e-2, 2 ** 16)
_CERT: contextvars.ContextVar[tuple[float, int]] = contextvars.ContextVar("lipschitz_cert",
                                                                         default=(LIPSCHITZ_RTOL, LIPSCHITZ_NODES))


def _structure(breakpoints: Any, spikes: Any) -> tuple[float, ...]:
    """The declared breakpoints plus a geometric fan of points around each spike."""
    pts: list[float] = []
    if breakpoints is not None:
        pts += V.float_array("breakpoints", breakpoints, ndim=1, allow_empty=True).tolist()
    if spikes is not None:
        sp = V.float_array("spikes", spikes, ndim=2, allow_empty=True)
        if sp.size and sp.shape[1] != 2:
            raise ParameterError("spikes", f"array of shape {sp.shape}", "(location, width) pairs")
        for loc, w in sp.reshape(-1, 2).tolist():
            if not w > 0:
                raise ParameterError("spikes", (loc, w), "(location, width) with width > 0")
            pts += [loc] + [loc + sgn * w * 2.0**j for j in range(7) for sgn in (-1.0, 1.0)]
    return tuple(sorted(set(pts)))


class Custom(NoiseFamily):
    """Noise ``scale * Z`` with a user log-density for Z.

    Parameters: ``logpdf`` (vectorised callable), ``scale`` (> 0), ``symmetric`` (you assert
    logpdf(-x) = logpdf(x); checked on a grid), ``log_concave`` (you assert it; together with
    ``log_concave`` (you assert it: s_alpha is then non-decreasing in |v| on each side),
    ``log_lipschitz`` (you claim |log p(x) - log p(y)| <= L |x - y| for Z, checked on a grid
    and wherever p is evaluated: divergences certified from L alone unless ``log_concave``, a
    certified R between grid points, and a finite D_inf), ``natural_norm`` (norm used by ``iid``; default 2),
    ``name`` (for repr), ``breakpoints`` / ``spikes`` (declared structure, in units of Z; see
    the module docstring). R needs ``log_concave`` or ``log_lipschitz``.

    >>> import numpy as np
    >>> c = Custom(lambda x: -0.5 * x * x - 0.5 * np.log(2 * np.pi), symmetric=True, log_concave=True)
    >>> round(c.renyi_shift(2.0, 1.0), 9)  # = Gaussian(1): alpha v^2 / 2
    1.0
    """

    __slots__ = ("_logpdf", "_scale", "symmetric", "log_concave", "log_lipschitz", "_norm", "name", "_breaks",
                 "_declared")
    _param_names = ("name", "scale", "symmetric")

    def __init__(self, logpdf: Callable[[np.ndarray], np.ndarray], *, scale: float = 1.0,
                 symmetric: bool = False, log_concave: bool = False, log_lipschitz: float | None = None,
                 natural_norm: float = 2.0, name: str | None = None, breakpoints: Any = None,
                 spikes: Any = None):
        if not callable(logpdf):
            raise ParameterTypeError("logpdf", logpdf, "a vectorised callable x -> log density")
        self._logpdf = logpdf
        self._scale = V.positive("scale", scale)
        self.symmetric = bool(symmetric)
        self.log_concave = bool(log_concave)
        self.log_lipschitz = None if log_lipschitz is None else V.positive("log_lipschitz", log_lipschitz)
        self._norm = V.real("natural_norm", natural_norm, lo=1.0, allow_inf=True,
                            expected="a norm order p >= 1 (inf allowed)")
        self.name = name if name is not None else getattr(logpdf, "__name__", "logpdf")
        self._declared = (breakpoints is not None or spikes is not None or self.log_concave
                          or self.log_lipschitz is not None)
        self._breaks = _structure(breakpoints, spikes)
        self._check()
        self._freeze()

    # -- validation -----------------------------------------------------------------------
    def _safe(self, x: np.ndarray) -> np.ndarray:
        try:
            y = np.asarray(self._logpdf(x), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ParameterError("logpdf", repr(exc), "a callable mapping float64 arrays to log-densities") from exc
        if y.shape != x.shape:
            raise ParameterError("logpdf", f"output of shape {y.shape} for input {x.shape}",
                                 "an output of the same shape as its input (vectorised)")
        bad = np.isnan(y) | (y == np.inf)
        if bad.any():
            i = int(np.argmax(bad))
            raise ParameterError("logpdf", f"{y[i]} at x={x[i]}", "finite log-densities (or -inf outside the support)")
        return y

    def _check(self) -> None:
        probe = np.concatenate([-np.geomspace(1e-3, 1e3, 13), [0.0], np.geomspace(1e-3, 1e3, 13)])
        y = self._safe(probe)
        if self.symmetric:
            y2 = self._safe(-probe)
            fin = np.isfinite(y) | np.isfinite(y2)
            if (fin & ~np.isclose(y, y2, rtol=1e-9, atol=1e-12)).any():
                i = int(np.argmax(fin & ~np.isclose(y, y2, rtol=1e-9, atol=1e-12)))
                raise ParameterError("symmetric", True,
                                     f"a symmetric log-density (logpdf({probe[i]}) != logpdf({-probe[i]}))")
        if self.log_lipschitz is not None:
            self._check_lipschitz(self.log_lipschitz)
        mass, err = _K.custom_mass(self._safe, 1.0, list(self._breaks))
        if not (abs(mass - 1.0) <= _MASS_TOL + err):
            raise ParameterError("logpdf", f"a density with total mass {mass:.12g}",
                                 f"a normalised log-density (mass 1 within {_MASS_TOL})")

    def _check_lipschitz(self, L: float) -> None:
        """The claim |log p(x) - log p(y)| <= L |x - y| on 2^15 + 1 points around the structure
        (finite differences; p must be positive everywhere)."""
        w = max(32.0, 64.0 / L, 2.0 * max((abs(b) for b in self._breaks), default=0.0))
        x = np.linspace(-w, w, 2 ** 15 + 1)
        y = self._safe(x)
        if not np.isfinite(y).all():
            i = int(np.argmax(~np.isfinite(y)))
            raise ParameterError("log_lipschitz", L, f"a density positive everywhere (log p is L-Lipschitz), "
                                                     f"but logpdf({x[i]}) = {y[i]}")
        dy, dx = np.abs(np.diff(y)), np.diff(x)
        tol = 64 * np.finfo(np.float64).eps * (np.abs(y[1:]) + np.abs(y[:-1]) + 1.0)
        bad = dy > L * dx * (1 + 1e-9) + tol
        if bad.any():
            i = int(np.argmax(dy / dx))
            raise ParameterError("log_lipschitz", L, f"a bound on |d/dx log p| (your claim, checked on a grid): "
                                                     f"|log p({x[i + 1]}) - log p({x[i]})| / {dx[i]} = "
                                                     f"{dy[i] / dx[i]}")

    # -- identity -------------------------------------------------------------------------
    def _key(self) -> tuple[Any, ...]:
        return (self._logpdf, self._scale, self.symmetric, self.log_concave, self.log_lipschitz, self._norm,
                self._breaks)

    def __repr__(self) -> str:
        return f"Custom({self.name}, scale={self._scale!r}, symmetric={self.symmetric})"

    @property
    def scale(self) -> float:
        return self._scale

    @property
    def natural_norm(self) -> float:
        return self._norm

    @property
    def _symmetric(self) -> bool:  # type: ignore[override]
        return self.symmetric

    @property
    def _monotone_proved(self) -> bool:  # type: ignore[override]
        return self.log_concave

    @property
    def _pure_pp(self) -> bool:  # type: ignore[override]
        return self.log_lipschitz is not None

    def _with_scale(self, scale: float) -> Custom:
        c = Custom(self._logpdf, scale=scale, symmetric=self.symmetric, log_concave=self.log_concave,
                   log_lipschitz=self.log_lipschitz, natural_norm=self._norm, name=self.name,
                   breakpoints=self._breaks)
        if not self._declared:
            object.__setattr__(c, "_declared", False)
        return c

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        raise ParameterError("noise", repr(self),
                             "a built-in family: Custom noise cannot be sampled by the fast samplers "
                             "(draw scale * Z with your own sampler)")

    # -- densities ------------------------------------------------------------------------
    @overload
    def logpdf(self, x: float) -> float: ...
    @overload
    def logpdf(self, x: Any) -> float | F64: ...
    def logpdf(self, x: Any) -> float | F64:
        xx = V.float_array("x", x, finite=False, allow_empty=True)
        flat = xx.ravel() / self._scale
        out = self._safe(flat).reshape(xx.shape) - math.log(self._scale)
        return float(out) if _is_scalar(x) else out

    @overload
    def pdf(self, x: float) -> float: ...
    @overload
    def pdf(self, x: Any) -> float | F64: ...
    def pdf(self, x: Any) -> float | F64:
        r = np.exp(self.logpdf(x))
        return float(r) if _is_scalar(x) else r

    def _cdf1(self, x: float) -> float:
        if x == -math.inf:
            return 0.0
        if x == math.inf:
            return 1.0
        f = lambda t: float(np.exp(self._safe(np.array([t]))[0]))  # noqa: E731
        z = x / self._scale
        from scipy import integrate
        if z <= 0:
            v, _ = integrate.quad(f, -np.inf, z, limit=200, epsabs=1e-13)
        else:
            v0, _ = integrate.quad(f, z, np.inf, limit=200, epsabs=1e-13)
            v = 1.0 - v0
        return cast(float, min(max(v, 0.0), 1.0))   # quad returns a float

    @overload
    def cdf(self, x: float) -> float: ...
    @overload
    def cdf(self, x: Any) -> float | F64: ...
    def cdf(self, x: Any) -> float | F64:
        """Distribution function by numerical integration (slow path)."""
        xx = V.float_array("x", x, finite=False, allow_empty=True)
        out = np.array([self._cdf1(float(t)) for t in xx.ravel()]).reshape(xx.shape)
        return float(out) if _is_scalar(x) else out

    @overload
    def ppf(self, q: float) -> float: ...
    @overload
    def ppf(self, q: Any) -> float | F64: ...
    def ppf(self, q: Any) -> float | F64:
        """Quantile by root finding on :meth:`cdf` (slow path)."""
        qq = V.float_array("q", q, allow_empty=True)
        if ((qq < 0) | (qq > 1)).any():
            raise ParameterError("q", float(qq[np.argmax((qq < 0) | (qq > 1))]), "probabilities in [0, 1]")
        res = []
        for p in qq.ravel():
            if p == 0.0:
                res.append(-math.inf)
                continue
            if p == 1.0:
                res.append(math.inf)
                continue
            lo, hi = -self._scale, self._scale
            while self._cdf1(lo) > p:
                lo *= 2
            while self._cdf1(hi) < p:
                hi *= 2
            from scipy import optimize
            res.append(optimize.brentq(lambda t, p=p: self._cdf1(t) - p, lo, hi, xtol=1e-12 * self._scale))
        out = np.array(res).reshape(qq.shape)
        return float(out) if _is_scalar(q) else out

    # -- divergences ----------------------------------------------------------------------
    def _shift_div(self, alpha: F64, u: F64) -> F64:
        if not self._declared:
            raise ParameterError("Custom", self.name, "a declared structure before divergences can be certified: "
                                 "breakpoints=[modes, kinks, support edges], spikes=[(location, width)] of narrow "
                                 "components, log_concave=True, or breakpoints=() for a smooth density with none")
        out = np.empty(alpha.shape, dtype=np.float64)
        for i, (a, uu) in enumerate(zip(alpha.ravel(), u.ravel())):
            if math.isinf(a):
                if self.log_lipschitz is None:
                    raise ParameterError("alpha", a, "a finite order for Custom noise (D_inf of a user density is "
                                                     "certified only from a declared log_lipschitz=L)")
                out.flat[i] = _d_inf_lipschitz(self.log_lipschitz, float(uu))
                continue
            if self._lipschitz_certified:
                L = float(self.log_lipschitz)  # type: ignore[arg-type]
                rtol, nodes = _CERT.get()
                d = _K.custom_shift_divergence_lipschitz(self._safe, float(a), float(uu), L, 1.0, list(self._breaks),
                                                         rtol, nodes)
                # every L-log-Lipschitz density has s_alpha <= these (tight for small shifts)
                out.flat[i] = min(d, _d_inf_lipschitz(L, float(uu)),
                                  _two_point_bound(float(a), L * abs(float(uu))) if a > 1.0 else math.inf)
                continue
            out.flat[i] = _K.custom_shift_divergence(self._safe, self.symmetric, float(a), float(uu), 1.0,
                                                     list(self._breaks))
        return out

    def _max_shift(self, alpha: float, eps: float) -> float:
        # the certified R (monotone in the radius by definition), not s_alpha at the boundary
        return _generic_max_shift(lambda u: float(self._R_std(np.array([alpha]), np.array([u]))[0]), eps)

    @property
    def _log_lipschitz(self) -> float | None:  # type: ignore[override]
        return self.log_lipschitz

    _monotone_checked = False  # a user density: a grid of s_alpha proves nothing (issue 22)

    @property
    def _lipschitz_certified(self) -> bool:
        """Divergences certified from log_lipschitz (lipschitz.cpp), not by adaptive quadrature
        over the declared structure (which log-concavity makes sound)."""
        return self.log_lipschitz is not None and not self.log_concave

    @property
    def _sup_rtol(self) -> float:  # type: ignore[override]
        return _R_CERT[0] if self._lipschitz_certified else 1e-6

    def _sup_lipschitz(self, alpha: float, u: float, rtol: float = 1e-6) -> float:
        token = _CERT.set(_R_CERT)
        try:
            return super()._sup_lipschitz(alpha, u, rtol)
        finally:
            _CERT.reset(token)

    def _refuse_R(self) -> None:
        raise ParameterError("Custom", self.name, "log_concave=True or log_lipschitz=L declared before R_alpha "
                             "(the sup of s_alpha over the shift ball) can be certified: samples of s_alpha "
                             "cannot bound it between them")


def _d_inf_lipschitz(L: float, u: float) -> float:
    """D_inf(p(. - u) || p) <= L |u| for an L-log-Lipschitz density, rounded up."""
    if math.isinf(u):
        return math.inf
    return round_up(L * abs(u), 2) if u != 0.0 else 0.0
