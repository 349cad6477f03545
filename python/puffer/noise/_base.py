"""Shared machinery of the noise families: Renyi shift divergences, R_alpha(zeta, z), the GWM
epsilon curve and calibration (Pierquin et al. 2024 Thm 3.3 / Cor 3.1).

Every number returned here that can end up in a guarantee is a certified upper bound:
closed forms are rounded outward; quadrature values carry their error bound (see
``cpp/renyi/renyi.hpp``); calibrated scales are re-checked after rounding and only returned
once the certified value at that scale meets the target.
"""
from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from .. import _validate as V
from .._golden import golden_min
from ..errors import NumericalError, ParameterError, ParameterTypeError
from ..guarantees import Provenance, RPPCurve, default_orders, round_up

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .product import IID

    #: a float64 array (what the vectorised methods return for array input)
    F64 = NDArray[np.float64]

_EPS = np.finfo(np.float64).eps
_ALPHA_MAX = 2.0 ** 16

# What the convenience methods of NoiseFamily (and IID) forward to in the modules above this one,
# registered by those modules as they load: puffer.noise.product puts "IID",
# puffer.noise.profile "hockey_stick", "delta_at" and "calibrate_eps_delta". The methods stay where
# users look for them while the imports run one way (product and profile import this module, never
# the reverse). puffer/noise/__init__.py imports both, and importing this module runs that
# __init__ first, so the table is complete before any method is called.
_ABOVE: dict[str, Any] = {}


def _alpha_array(name: str, alpha: Any, *, allow_one: bool = False) -> np.ndarray:
    """alpha as a float64 array; every entry > 1 (>= 1 if allow_one), NaN rejected, inf allowed."""
    a = V.float_array(name, alpha, finite=False, allow_empty=True)
    bad = ~((a >= 1.0) if allow_one else (a > 1.0))
    if bad.any():
        raise ParameterError(name, float(a.ravel()[np.argmax(bad.ravel())]),
                             "a Renyi order > 1 (inf allowed)" if not allow_one else "an order >= 1")
    return a


def _finite_array(name: str, x: Any) -> np.ndarray:
    return V.float_array(name, x, finite=True, allow_empty=True)


def _nonneg_array(name: str, x: Any) -> np.ndarray:
    a = V.float_array(name, x, finite=True, allow_empty=True)
    if (a < 0).any():
        raise ParameterError(name, float(a.ravel()[np.argmax(a.ravel() < 0)]), "a radius >= 0")
    return a


def _ret(out: F64, scalar: bool, dest: F64 | None) -> float | F64:
    if dest is not None:
        if not isinstance(dest, np.ndarray) or dest.shape != out.shape or dest.dtype != np.float64:
            raise ParameterError("out", f"{type(dest).__name__} {getattr(dest, 'shape', '')}",
                                 f"a float64 ndarray of shape {out.shape}")
        dest[...] = out
        return dest
    return float(out) if scalar else out


def _is_scalar(*xs: Any) -> bool:
    try:
        return all(np.ndim(x) == 0 for x in xs)
    except (ValueError, AttributeError):  # ragged input: not a scalar (validated by the caller)
        return False


def _broadcast(a: np.ndarray, x: np.ndarray, names: str = "alpha and v") -> tuple[np.ndarray, np.ndarray]:
    try:
        b = np.broadcast_arrays(a, x)
    except ValueError:
        raise ParameterError(names, f"shapes {a.shape} and {x.shape}", "shapes that broadcast together") from None
    return b[0], b[1]


def _jsonable(v: Any) -> Any:
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, NoiseFamily):
        return v.describe()
    return repr(v)


class NoiseFamily(abc.ABC):
    """Base class of additive noise laws on R (immutable; compare with ``==``).

    Subclasses define ``_params`` (constructor arguments in order), ``scale``,
    ``natural_norm``, the density functions, :meth:`_with_scale` and the divergence kernel
    :meth:`_shift_div` (standardized shifts u = v / scale, alpha >= 1 with 1 = KL).
    """

    __slots__ = ("_frozen",)
    _param_names: tuple[str, ...] = ()
    #: True when s_alpha(zeta, v) is proved non-decreasing in |v| (Pierquin et al. 2024); else
    #: R checks monotonicity numerically on a grid before using s_alpha(zeta, z).
    _monotone_proved: bool = True
    #: symmetric noise: s_alpha(zeta, v) = s_alpha(zeta, -v)
    _symmetric: bool = True
    #: R_inf (pure PP) can be certified (Custom: only with a declared log_lipschitz)
    _pure_pp: bool = True

    # -- immutability, equality, repr ---------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable; use .calibrate or a new instance")
        object.__setattr__(self, name, value)

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._param_names)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + self._key())

    def __repr__(self) -> str:
        args = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._param_names)
        return f"{type(self).__name__}({args})"

    def describe(self) -> dict[str, Any]:
        """A JSON-able description: ``{"family": name, <constructor parameters>}``."""
        return {"family": type(self).__name__, **{n: _jsonable(getattr(self, n)) for n in self._param_names}}

    # -- to be provided by subclasses -----------------------------------------------------
    #: the norm in which d-dimensional iid noise has its natural sensitivity (class attribute
    #: or property of each family)
    if TYPE_CHECKING:
        @property
        def natural_norm(self) -> float: ...

        def _sampler_spec(self) -> tuple[str, dict[str, float]]:
            """(kind, params) for :mod:`puffer.sampling` (every family defines it)."""

    @overload
    def logpdf(self, x: float) -> float: ...
    @overload
    def logpdf(self, x: Any) -> float | F64: ...
    @abc.abstractmethod
    def logpdf(self, x: Any) -> float | F64:
        """Log density at x (vectorised)."""

    @overload
    def pdf(self, x: float) -> float: ...
    @overload
    def pdf(self, x: Any) -> float | F64: ...
    @abc.abstractmethod
    def pdf(self, x: Any) -> float | F64:
        """Density at x (vectorised)."""

    @overload
    def cdf(self, x: float) -> float: ...
    @overload
    def cdf(self, x: Any) -> float | F64: ...
    @abc.abstractmethod
    def cdf(self, x: Any) -> float | F64:
        """Distribution function at x (vectorised)."""

    @overload
    def ppf(self, q: float) -> float: ...
    @overload
    def ppf(self, q: Any) -> float | F64: ...
    @abc.abstractmethod
    def ppf(self, q: Any) -> float | F64:
        """Quantile function at q (vectorised)."""

    @property
    @abc.abstractmethod
    def scale(self) -> float:
        """The family's scale parameter."""

    @abc.abstractmethod
    def _with_scale(self, scale: float) -> NoiseFamily:
        """The same family with another scale (shape parameters kept)."""

    @abc.abstractmethod
    def _shift_div(self, alpha: F64, u: F64) -> F64:
        """Certified s_alpha at standardised shifts u (broadcast with alpha)."""

    def _max_shift(self, alpha: float, eps: float) -> float:
        """Largest standardized shift u with certified s_alpha(u) <= eps (from below)."""
        return _generic_max_shift(lambda u: float(self._shift_div(np.array([alpha]), np.array([u]))[0]), eps)

    # -- divergences ----------------------------------------------------------------------
    @overload
    def renyi_shift(self, alpha: float, v: float, *, out: None = None) -> float: ...
    @overload
    def renyi_shift(self, alpha: Any, v: Any, *, out: F64) -> F64: ...
    @overload
    def renyi_shift(self, alpha: Any, v: Any, *, out: None = None) -> float | F64: ...
    def renyi_shift(self, alpha: Any, v: Any, *, out: F64 | None = None) -> float | F64:
        """s_alpha(zeta, v) = D_alpha(zeta(. - v) || zeta): the Renyi divergence between the
        noise shifted by v and the noise (Pierquin et al. 2024), a certified upper bound.

        ``alpha`` (> 1, ``inf`` allowed) and ``v`` broadcast; returns a float for scalar input.

        >>> from puffer.noise import Laplace
        >>> round(Laplace(1.0).renyi_shift(2.0, 1.0), 12)
        0.619123629999
        """
        if out is None and type(alpha) is float and type(v) is float:
            # fast scalar path (same checks as below, without array conversions)
            if alpha > 1.0 and math.isfinite(v):
                return self._shift1(alpha, v)
        scalar = _is_scalar(alpha, v)
        a = _alpha_array("alpha", alpha)
        x = _finite_array("v", v)
        a, x = _broadcast(a, x)
        u = self._standardize(x)
        res = self._shift_div(a.ravel(), u.ravel()).reshape(a.shape)
        return _ret(res, scalar, out)

    def _shift1(self, alpha: float, v: float) -> float:
        u = abs(v) / self.scale if self._symmetric else v / self.scale
        return float(self._shift_div(np.array([alpha]), np.array([u]))[0])

    @overload
    def kl_shift(self, v: float, *, out: None = None) -> float: ...
    @overload
    def kl_shift(self, v: Any, *, out: F64) -> F64: ...
    @overload
    def kl_shift(self, v: Any, *, out: None = None) -> float | F64: ...
    def kl_shift(self, v: Any, *, out: F64 | None = None) -> float | F64:
        """KL(zeta(. - v) || zeta), the alpha -> 1 limit of :meth:`renyi_shift` (certified upper bound)."""
        scalar = _is_scalar(v)
        x = _finite_array("v", v)
        u = self._standardize(x)
        res = self._shift_div(np.ones(u.size), u.ravel()).reshape(x.shape)
        return _ret(res, scalar, out)

    def _standardize(self, v: np.ndarray) -> np.ndarray:
        # u = |v| / scale; the division is correctly rounded and the kernels absorb 1 ulp of u;
        # beyond the float range it is inf, for which the kernels answer D = inf (an upper bound)
        with np.errstate(over="ignore"):
            return np.abs(v) / self.scale if self._symmetric else v / self.scale

    @overload
    def R(self, alpha: float, z: float, *, out: None = None) -> float: ...
    @overload
    def R(self, alpha: Any, z: Any, *, out: F64) -> F64: ...
    @overload
    def R(self, alpha: Any, z: Any, *, out: None = None) -> float | F64: ...
    def R(self, alpha: Any, z: Any, *, out: F64 | None = None) -> float | F64:
        """R_alpha(zeta, z) = sup over |v| <= z of s_alpha(zeta, v) (Pierquin et al. 2024), certified.

        For families whose shift divergence is proved non-decreasing in |v| this is
        s_alpha(zeta, z); :class:`~puffer.noise.Custom` certifies it from a declared property
        (log-concavity or a log-Lipschitz constant) or refuses.
        """
        scalar = _is_scalar(alpha, z)
        a = _alpha_array("alpha", alpha)
        zz = _nonneg_array("z", z)
        a, zz = _broadcast(a, zz, "alpha and z")
        res = self._R_flat(a.ravel().astype(np.float64), zz.ravel().astype(np.float64)).reshape(a.shape)
        return _ret(res, scalar, out)

    #: built-in families only: s_alpha non-decreasing in |v| is a stated property of the family
    #: (symmetric unimodal, Pierquin et al. 2024), checked on a grid where not proved
    _monotone_checked: bool = True
    #: a bound L on |d/dx log zeta| of the standardized density (None: not known); used to
    #: certify R_alpha between grid points when s_alpha is not proved monotone
    _log_lipschitz: float | None = None
    #: how close to the largest value seen the Lipschitz bound of R_alpha between grid points is
    #: refined (Custom: as close as its divergences are certified)
    _sup_rtol: float = 1e-6

    def _R_flat(self, a: np.ndarray, z: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):   # beyond the float range: u = inf, D = inf
            u = z / self.scale
        return self._R_std(a, u)

    def _refuse_R(self) -> None:
        raise NumericalError(f"{self!r}: s_alpha(zeta, v) is not proved non-decreasing in |v| and no log-Lipschitz "
                             "bound is known; R_alpha (a sup over the shift ball) cannot be certified")

    def _R_std(self, a: np.ndarray, u: np.ndarray) -> np.ndarray:
        """sup of s_alpha over the standardized ball [-u, u], certified: the boundary value where
        s_alpha is non-decreasing in |v| (proved, or for the shipped Student-type families with
        k != 2 asserted by the spec and checked on a grid), else the log-Lipschitz bound
        (:meth:`_sup_lipschitz`), else refused."""
        if self._monotone_proved or (self._log_lipschitz is None and self._monotone_checked):
            val = self._shift_div(a, u)
            if not self._symmetric:
                val = np.maximum(val, self._shift_div(a, -u))
            if not self._monotone_proved and a.size:
                self._check_monotone(a, u, val)
            return val
        if self._log_lipschitz is None:
            self._refuse_R()
        out = np.empty(a.shape, dtype=np.float64)
        for i, (aa, uu) in enumerate(zip(a.ravel().tolist(), u.ravel().tolist())):
            out.flat[i] = self._sup_lipschitz(aa, uu, self._sup_rtol)
        return out

    def _sup_lipschitz(self, alpha: float, u: float, rtol: float = 1e-6) -> float:
        """Certified sup of s_alpha over [-u, u] when |d/dx log zeta| <= L (standardized):
        zeta(x - v) <= zeta(x - w) e^{L |v - w|} gives s_alpha(t) <= s_alpha(w) + c |t - w|,
        c = alpha L / (alpha - 1), so on [v, w] s_alpha <= (s(v) + s(w) + c (w - v)) / 2 (or the
        larger end when |s(w) - s(v)| >= c (w - v)). Starting from 8 intervals per side, the interval
        of largest bound is halved until every bound is within rtol of the largest value seen (64
        evaluations at most per side); the result is the largest bound, capped by D_inf (>= every
        D_alpha) and by the two-point bound (:func:`_two_point_bound`, tight for small shifts)."""
        L = float(self._log_lipschitz)  # type: ignore[arg-type]
        cap = float(self._shift_div(np.array([math.inf]), np.array([u]))[0]) if self._pure_pp else math.inf
        if u == 0.0 or math.isinf(alpha) or math.isinf(u):
            return 0.0 if u == 0.0 else (math.inf if math.isinf(u) else cap)
        cap = min(cap, _two_point_bound(alpha, L * u))
        c = alpha * L / (alpha - 1.0) * (1.0 + 1e-12)

        def s(v: float) -> float:
            return float(self._shift_div(np.array([alpha]), np.array([v]))[0])

        def bound(v: float, sv: float, w: float, sw: float) -> float:
            h = w - v
            return max(sv, sw) if abs(sv - sw) >= c * h else 0.5 * (sv + sw + c * h) * (1.0 + 4 * _EPS)

        best = 0.0
        for sign in ((1.0,) if self._symmetric else (1.0, -1.0)):
            pts = [(sign * u * j / 8.0, 0.0 if j == 0 else s(sign * u * j / 8.0)) for j in range(9)]
            if sign < 0:
                pts.reverse()
            for _ in range(64):
                top = max(p[1] for p in pts)
                bs = [bound(pts[j][0], pts[j][1], pts[j + 1][0], pts[j + 1][1]) for j in range(len(pts) - 1)]
                jw = int(np.argmax(bs))
                if bs[jw] <= top * (1.0 + rtol):
                    break
                m = 0.5 * (pts[jw][0] + pts[jw + 1][0])
                pts.insert(jw + 1, (m, s(m)))
            top = max(p[1] for p in pts)
            bs = [bound(pts[j][0], pts[j][1], pts[j + 1][0], pts[j + 1][1]) for j in range(len(pts) - 1)]
            best = max(best, max(bs))
        return round_up(min(best, cap), 2)

    def _check_monotone(self, a: np.ndarray, u: np.ndarray, val: np.ndarray, n: int = 8) -> None:
        frac = np.arange(1, n) / n
        ag = np.repeat(a, n - 1)
        ug = (u[:, None] * frac[None, :]).ravel()
        g = self._shift_div(ag, ug).reshape(a.size, n - 1)
        g = np.concatenate([g, val[:, None]], axis=1)
        tol = 1e-12 * np.abs(g) + 1e-300
        with np.errstate(invalid="ignore"):   # u = inf (beyond the float range): R = inf anyway
            bad = (np.diff(g, axis=1) < -tol[:, 1:]).any(axis=1)
        if bad.any():
            i = int(np.argmax(bad))
            raise NumericalError(
                f"{self!r}: s_alpha(zeta, v) is not non-decreasing on a grid of [0, {u[i] * self.scale}] "
                f"at alpha={a[i]}; R_alpha cannot be reduced to the boundary shift")

    @overload
    def epsilon(self, alpha: float, sensitivity: float, *, out: None = None) -> float: ...
    @overload
    def epsilon(self, alpha: Any, sensitivity: Any, *, out: F64) -> F64: ...
    @overload
    def epsilon(self, alpha: Any, sensitivity: Any, *, out: None = None) -> float | F64: ...
    def epsilon(self, alpha: Any, sensitivity: Any, *, out: F64 | None = None) -> float | F64:
        """The General Wasserstein mechanism's epsilon at order ``alpha`` for sensitivity
        Delta: R_alpha(zeta, Delta) (Pierquin et al. 2024, Thm 3.3). ``alpha = inf`` gives the pure-PP epsilon."""
        return self.R(alpha, sensitivity, out=out)

    def _provenance(self, sensitivity: float, extra: str = "") -> Provenance:
        return Provenance(
            mechanism="GeneralWasserstein",
            theorem="Pierquin et al. 2024, Thm 3.3: eps(alpha) = R_alpha(zeta, Delta_G)",
            sensitivity=sensitivity,
            noise=repr(self),
            notes=(f"norm=l{self._norm_str()}; certified upper bounds (closed form rounded up or "
                   f"log-space Gauss-Kronrod with its error bound){extra}"),
        )

    def _norm_str(self) -> str:
        p = self.natural_norm
        return "inf" if math.isinf(p) else (str(int(p)) if float(p).is_integer() else str(p))

    def rpp_curve(self, sensitivity: float, alphas: Any = None) -> RPPCurve:
        """The GWM RPP curve alpha -> R_alpha(zeta, Delta) on ``alphas`` (default:
        :func:`puffer.default_orders`); built from the function, so ``to_pp`` refines
        between orders."""
        delta_g = V.nonneg("sensitivity", sensitivity)
        grid = default_orders() if alphas is None else _alpha_array("alphas", alphas)
        grid = np.asarray(grid, dtype=np.float64).ravel()
        if alphas is None and self._pure_pp and math.isfinite(float(self.R(math.inf, delta_g))):
            # pure PP is available (Laplace, Cauchy, ...): keep alpha = inf on the curve so
            # that to_pp can pick it (the grid alone misses it, e.g. Laplace's eps = Delta/b)
            # orders up to 2^16 let to_pp refine toward it (calibrate_pp searches the same range)
            grid = np.concatenate([grid, 2.0 ** np.arange(11, 17), [math.inf]])
        vals = self.R(grid, np.full(grid.shape, delta_g))
        fn = lambda a: float(self.R(float(a), delta_g))  # noqa: E731
        return RPPCurve(tuple(float(x) for x in grid), tuple(float(x) for x in np.atleast_1d(vals)),
                        self._provenance(delta_g), fn)

    # -- calibration ----------------------------------------------------------------------
    def calibrate(self, *, eps: float, sensitivity: float, alpha: float | None = None,
                  delta: float | None = None) -> NoiseFamily:
        """The same family (shape parameters kept) with the smallest certified scale.

        * ``calibrate(alpha=a, eps=e, sensitivity=D)``: R_a(zeta, D) <= e ((a, e)-RPP for
          the GWM, Pierquin et al. 2024, Thm 3.3); ``alpha = inf`` targets pure e-PP.
        * ``calibrate(eps=e, delta=d, sensitivity=D)``: (e, d)-PP with the least scale: from the
          noise's privacy profile where it can be certified (the exact (eps, delta) of the noise,
          :mod:`puffer.noise.profile`), else through the Rényi curve (:meth:`calibrate_pp`).

        The returned scale is rounded up and re-checked: its certified R is <= the target.

        >>> from puffer.noise import Gaussian
        >>> s = Gaussian(1.0).calibrate(alpha=2.0, eps=1.0, sensitivity=2.0).sigma  # sigma^2 = 4
        >>> 2.0 <= s <= 2.0 * (1 + 1e-14)
        True
        """
        if delta is not None:
            if alpha is not None:
                raise ParameterError("alpha", alpha, "None when delta is given (the order is optimised)")
            fam: NoiseFamily = _ABOVE["calibrate_eps_delta"](self, eps=eps, delta=delta, sensitivity=sensitivity)[0]
            return fam
        if alpha is None:
            raise ParameterError("alpha", None, "a Renyi order > 1 (or give delta for (eps, delta)-PP)")
        a = V.alpha("alpha", alpha)
        e = V.positive("eps", eps)
        dg = V.positive("sensitivity", sensitivity)
        u = self._max_shift(a, e)
        if not u > 0:
            raise ParameterError("eps", e, f"a target reachable by {type(self).__name__} noise at alpha={a} "
                                           f"(R_alpha(zeta, z) > eps for every scale)")
        return self._finish_scale(dg / u, lambda f: float(f.R(a, dg)) <= e, f"R_{a} <= {e}")

    def calibrate_pp(self, *, eps: float, delta: float, sensitivity: float) -> NoiseFamily:
        """Smallest scale giving (eps, delta)-PP for the GWM through its Rényi curve and the conversion
        of Canonne, Kamath & Steinke 2020, Prop 12 (below Prop 2.2 at every order):
        min over alpha of R_alpha(zeta, Delta) + log1p(-1/alpha) - (log delta + log alpha)/(alpha - 1) <= eps.

        For each order alpha > 1 + log(1/delta)/eps the largest admissible standardized
        shift is found by the certified root finder; the order is optimised by golden section
        in log(alpha - alpha_min). The target is met with a relative slack of 1e-9 so that
        ``rpp_curve(Delta).to_pp(delta)`` (which re-optimises alpha) also meets it.
        """
        e = V.positive("eps", eps)
        d = V.delta_open("delta", delta)
        dg = V.positive("sensitivity", sensitivity)
        L = -math.log(d)
        target = e * (1.0 - 1e-9)
        a_min = 1.0 + L / target

        from ..guarantees.conversions import fast
        cks = fast("cks")

        def shift_at(alpha: float) -> float:
            rem = target - cks(alpha, 0.0, d)   # the CKS penalty (eps of R = 0, rounded up; >= 0)
            if rem <= 0:
                return 0.0
            return self._max_shift(alpha, rem)

        # golden section on t = log((alpha - 1)/(a_min - 1) - 1), maximising the shift;
        # alpha <= 2^16, the range of rpp_curve's grid, so to_pp can find the same order
        lo = -12.0
        hi = math.log(max((_ALPHA_MAX - 1.0) / (a_min - 1.0) - 1.0, math.exp(lo + 1.0)))
        best_t, neg_u = golden_min(lambda t: -shift_at(1.0 + (a_min - 1.0) * (1.0 + math.exp(t))),
                                   lo, hi, iters=48, tol=1e-6)
        best_u = -neg_u
        best_alpha = 1.0 + (a_min - 1.0) * (1.0 + math.exp(best_t))
        # pure PP (alpha = inf) when the family has a finite R_inf
        try:
            u_inf = self._max_shift(math.inf, target)
        except ParameterError:  # Custom: D_inf cannot be certified
            u_inf = 0.0
        if u_inf > best_u:
            best_u, best_alpha = u_inf, math.inf
        if not best_u > 0:
            raise ParameterError("eps", e, f"a reachable (eps, delta) target for {type(self).__name__} noise")
        a_star = best_alpha

        def ok(fam: NoiseFamily) -> bool:
            r = float(fam.R(a_star, dg))
            if math.isinf(a_star):
                return r <= e
            return cks(a_star, r, d) <= e

        return self._finish_scale(dg / best_u, ok, f"(eps={e}, delta={d})-PP at alpha={a_star}")

    def _finish_scale(self, s: float, ok: Callable[[NoiseFamily], bool], what: str) -> NoiseFamily:
        s = round_up(float(s), 4)
        for _ in range(64):
            fam = self._with_scale(s)
            if ok(fam):
                return fam
            s = round_up(s * (1.0 + 64 * _EPS), 2)
        raise NumericalError(f"calibration of {self!r} to {what} did not verify after rounding")

    # -- privacy profile (puffer.noise.profile) ---------------------------------------------
    def hockey_stick(self, eps: Any, v: Any) -> Any:
        """H_{e^eps}(N + v || N), the exact (eps, delta) of the noise at shift v, as a certified upper
        bound (:mod:`puffer.noise.profile`)."""
        return _ABOVE["hockey_stick"](self, eps, v)

    def privacy_profile(self, eps: float, sensitivity: float) -> float:
        """delta(eps) = sup over |v| <= sensitivity of :meth:`hockey_stick`: this noise gives
        (eps, delta(eps))-PP at that sensitivity (:mod:`puffer.noise.profile`)."""
        return float(_ABOVE["delta_at"](self, eps, sensitivity))

    # -- products -------------------------------------------------------------------------
    def iid(self, d: int) -> IID:
        """d-dimensional noise with iid coordinates (Pierquin et al. 2024 additivity, Lemma B.1)."""
        out: IID = _ABOVE["IID"](self, d)
        return out


def _two_point_bound(alpha: float, x: float) -> float:
    """sup of D_alpha(zeta(. - v) || zeta) over |v| <= x / L for an L-log-Lipschitz density, rounded up.

    The ratio r = zeta(X - v) / zeta(X), X ~ zeta, has mean 1 and lies in [a, b] = [e^-x, e^x];
    r^alpha is convex, so E r^alpha <= ((b - 1) a^alpha + (1 - a) b^alpha) / (b - a) (the chord),
    i.e. exp((alpha - 1) D) - 1 <= [expm1(x) expm1(-alpha x) - expm1(-x) expm1(alpha x)] / (2 sinh x)
    ~ alpha (alpha - 1) x^2 / 2. Evaluated in 80-digit decimal arithmetic (the two products cancel
    to first order), then rounded up."""
    if x <= 0.0:
        return 0.0
    import decimal
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        X, A = decimal.Decimal(x), decimal.Decimal(alpha)
        one = decimal.Decimal(1)
        e1, em1 = X.exp() - one, (-X).exp() - one
        ea, ema = (A * X).exp() - one, (-A * X).exp() - one
        j1 = (e1 * ema - em1 * ea) / (X.exp() - (-X).exp())
        d = (one + j1).ln() / (A - one)
    return round_up(float(d) * (1.0 + 1e-14), 2)


def _generic_max_shift(D: Callable[[float], float], eps: float) -> float:
    """Largest u with D(u) <= eps for a non-decreasing certified D, bracketed on the safe side
    (Illinois on log D against log u, relative width 1e-10)."""
    if eps <= 0:
        return 0.0
    if math.isinf(eps):
        return math.inf
    le = math.log(eps)

    def g(u: float) -> float:
        v = D(u)
        return math.log(v) - le if v > 0 else -math.inf

    u0 = 1.0
    g0 = g(u0)
    if g0 <= 0:
        lo, glo, hi = u0, g0, u0 * 4
        ghi = g(hi)
        while ghi <= 0:
            if hi > 1e300:
                return math.inf
            lo, glo, hi = hi, ghi, hi * 16
            ghi = g(hi)
    else:
        hi, ghi, lo = u0, g0, u0 / 4
        glo = g(lo)
        while glo > 0:
            if lo < 1e-300:
                return 0.0
            hi, ghi, lo = lo, glo, lo / 16
            glo = g(lo)
    side = 0
    for _ in range(200):
        tl, th = math.log(lo), math.log(hi)
        if th - tl <= 1e-10:
            break
        if math.isfinite(glo) and math.isfinite(ghi) and ghi > glo:
            t = (tl * ghi - th * glo) / (ghi - glo)
        else:
            t = 0.5 * (tl + th)
        w = th - tl
        t = min(max(t, tl + 1e-3 * w), th - 1e-3 * w)
        um = math.exp(t)
        gm = g(um)
        if gm <= 0:
            lo, glo = um, gm
            if side == -1:
                ghi *= 0.5
            side = -1
        else:
            hi, ghi = um, gm
            if side == 1:
                glo *= 0.5
            side = 1
    return lo


def check_type_real(name: str, x: Any) -> None:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ParameterTypeError(name, x, "a real number")
