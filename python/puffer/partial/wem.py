"""The Wasserstein exponential mechanism for partially private data.

The Wasserstein exponential mechanism (Seeman, Reimherr & Slavkovic, "Formal privacy for
partially private data", Thm 9): release Y with density w.r.t. a base measure nu_z

    f_X(y) proportional to exp(-eps L_X(y) / (2 sigma(Delta_z)))

which is eps-TP for the framework giving Delta_z. Samplers:

* finite support (:class:`WassersteinExponential` with ``support=``): exact categorical draws from
  the log-weights -eps L/(2 sigma) + log nu (C++ inverse-CDF sampler);
* an interval with the |.| loss and Lebesgue base (``interval=(lo, hi)``): exact truncated Laplace of
  scale 2 sigma / eps (Example 1, Eq. 13);
* the constrained lattice of the case study (:class:`LatticeWEM`): Metropolis-Hastings with
  mass-preserving moves -- approximate; guarantees say so ("sampler approximate (MCMC)").

sigma = 0 (Delta_z = 0: the statistic is fixed by z) releases the minimiser, never divides by 0;
an infinite Delta_z raises :class:`puffer.UnboundedSensitivityError`. The factor 2 of the exponent
(the x-dependent normaliser) is kept.

>>> import numpy as np
>>> m = WassersteinExponential(1.0, delta_z=1.0, support=np.arange(11), loss="abs")
>>> m.release(4, rng=0) in set(range(11))
True
>>> round(float(np.exp(m.log_density(4, 4))), 6)
0.263323
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from scipy.special import logsumexp

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError, UnboundedSensitivityError
from ..guarantees import Provenance, round_up
from ..guarantees.tp import TP
from ..refs import Ref
from . import _streams
from . import distributions as D
from ._mechanism import TPMechanism
from .frameworks import TPFramework
from .sensitivity import sigma_norm_loss

__all__ = ["WassersteinExponential", "LatticeWEM"]

_LOSSES = ("abs", "l1", "l2", "linf")


def _resolve_sigma(framework: Any, delta_z: Any, sigma: Any, loss: Any) -> tuple[float, float, TPFramework]:
    if framework is not None and not isinstance(framework, TPFramework):
        raise ParameterTypeError("framework", framework, "a puffer.partial.TPFramework")
    if framework is not None and delta_z is not None:
        raise ParameterError("delta_z", delta_z, "None when a framework is given (it carries Delta_z)")
    if framework is None:
        if delta_z is None:
            raise ParameterError("delta_z", None, "a framework or delta_z (the W_inf sensitivity given z)")
        framework = TPFramework.assumed(V.nonneg("delta_z", delta_z, allow_inf=True))
    dz = framework.delta_z
    if math.isinf(dz):
        raise UnboundedSensitivityError("Delta_z is infinite: no eps-TP mechanism of this form (no free lunch)")
    if sigma is None:
        if callable(loss) and not isinstance(loss, str):
            raise ParameterError("sigma", None, "sigma(Delta_z) for a custom loss (Thm 9: sup over y and "
                                 "d(x, x') <= Delta_z of |L_x(y) - L_x'(y)|)")
        sig = sigma_norm_loss(dz)
    else:
        sig = V.nonneg("sigma", sigma, allow_inf=True)
        if math.isinf(sig):
            raise UnboundedSensitivityError("sigma(Delta_z) is infinite: no eps-TP mechanism of this form")
    return dz, sig, framework


def _loss_values(loss: Any, support: np.ndarray, t: Any) -> np.ndarray:
    if callable(loss) and not isinstance(loss, str):
        v = np.asarray(loss(t, support), dtype=np.float64)
        if v.shape != (support.shape[0],):
            raise ParameterError("loss", f"output of shape {v.shape}",
                                 f"one loss per support point ({support.shape[0]})")
        if np.isnan(v).any() or (v < 0).any():
            raise ParameterError("loss", "negative or NaN values", "losses in [0, inf]")
        return v
    tt = np.asarray(t, dtype=np.float64)
    diff = support - tt if support.ndim == 1 else support - tt.reshape(1, -1)
    if support.ndim == 1:
        return np.abs(diff)
    if tt.shape != (support.shape[1],):
        raise ParameterError("x", f"statistic of shape {tt.shape}",
                             f"shape ({support.shape[1]},) (the support dimension)")
    losses: dict[str, Callable[[], np.ndarray]] = {
        "abs": lambda: np.abs(diff).sum(1), "l1": lambda: np.abs(diff).sum(1),
        "l2": lambda: np.sqrt((diff * diff).sum(1)), "linf": lambda: np.abs(diff).max(1)}
    return losses[loss]()


class WassersteinExponential(TPMechanism):
    """WEM (Thm 9) on a finite support or an interval.

    Parameters
    ----------
    eps : float
        The target eps > 0 of eps-TP.
    framework : TPFramework, optional
        Gives Delta_z (else pass ``delta_z``: then flagged "Delta_z assumed").
    delta_z, sigma : float, optional
        sigma(Delta_z) defaults to Delta_z for the norm losses (reverse triangle inequality);
        required for a custom loss.
    loss : "abs" | "l1" | "l2" | "linf" | callable(t, support) -> losses
        The norm losses are L_x(y) = ||y - T(x)||; ``release(t)`` takes the statistic T(x).
    support : array (K,) or (K, d), optional
        Finite output space.
    log_base : array (K,), optional
        With ``support``: the log nu_z weights of its points (may depend on z, never on x;
        -inf excludes a point); default uniform.
    interval : (lo, hi), optional
        Output space [lo, hi] with Lebesgue base and the abs loss (truncated Laplace). With
        Delta_z = Delta/n this is the DP exponential mechanism of Eq. 13 (Example 1, Z independent
        of the records).
    space : "R^d" or "Z^d", optional
        The whole space with a translation-invariant base (Lebesgue or counting measure): K-norm
        noise on R^d, product discrete Laplace on Z^d (``"l1"`` loss).
    dim : int
        The dimension d of ``space``.
    """

    theorem = "Seeman et al. 2024, Thm 9"
    refs: tuple[Ref, ...] = (Ref("seeman2024", "Thm 9"),)

    def __init__(self, eps: float, framework: TPFramework | None = None, *, delta_z: float | None = None,
                 sigma: float | None = None, loss: Any = "abs", support: Any = None, log_base: Any = None,
                 interval: tuple[float, float] | None = None, space: str | None = None, dim: int = 1):
        self.eps = V.positive("eps", eps)
        if not (callable(loss) or loss in _LOSSES):
            raise ParameterError("loss", loss, f"one of {_LOSSES} or a callable (t, support) -> losses")
        self.loss = loss
        self.delta_z, self.sigma, self.framework = _resolve_sigma(framework, delta_z, sigma, loss)
        if sum(v is not None for v in (support, interval, space)) != 1:
            raise ParameterError("support", support, "exactly one of support= (finite), interval=(lo, hi) or "
                                 "space='R^d' / 'Z^d'")
        self.support = None
        self.log_base = None
        self.interval = None
        self.space = None
        self.dim = V.integer("dim", dim, lo=1)
        if space is not None:
            if space not in ("R^d", "Z^d"):
                raise ParameterError("space", space, "'R^d' (Lebesgue base) or 'Z^d' (counting measure)")
            if log_base is not None:
                raise ParameterError("log_base", log_base, f"None with space={space!r} (translation-invariant base)")
            if callable(loss) or (loss == "abs" and self.dim > 1):
                raise ParameterError("loss", loss, "a norm loss ('l1', 'l2', 'linf'; 'abs' in one dimension)")
            if space == "Z^d" and loss not in ("abs", "l1"):
                raise ParameterError("loss", loss, "'l1' on Z^d (product of discrete Laplace laws); for other "
                                     "norms on a lattice use LatticeWEM (MCMC)")
            self.space = space
        elif support is not None:
            sup = V.float_array("support", support, ndim=(1, 2))
            self.support = sup
            if log_base is not None:
                lb = np.asarray(log_base, dtype=np.float64)
                if lb.shape != (sup.shape[0],) or np.isnan(lb).any() or (lb == np.inf).any():
                    raise ParameterError("log_base", log_base, f"{sup.shape[0]} log-weights in [-inf, inf)")
                if not np.isfinite(lb).any():
                    raise ParameterError("log_base", log_base, "a base measure with positive mass somewhere")
                self.log_base = lb
        else:
            if loss != "abs":
                raise ParameterError("loss", loss, "'abs' with interval= (truncated Laplace)")
            if log_base is not None:
                raise ParameterError("log_base", log_base, "None with interval= (Lebesgue base)")
            if not isinstance(interval, tuple) or len(interval) != 2:
                raise ParameterTypeError("interval", interval, "a (lo, hi) tuple")
            lo, hi = V.real("interval[0]", interval[0]), V.real("interval[1]", interval[1])
            if not lo < hi:
                raise ParameterError("interval", interval, "lo < hi")
            self.interval = (lo, hi)
            # exp(-eps |y - t| / (2 sigma)) on [lo, hi]: with Delta_z = Delta / n on [-Delta/2, Delta/2]
            # this is the DP exponential mechanism of Eq. 13 (Seeman et al. 2024, Example 1)
            self.refs = type(self).refs + (Ref("seeman2024", "Eq. 13"),)
        assumptions = self.framework.assumptions
        f = self.framework.guarantee_fields()
        self.guarantee = TP(self.eps, z=f["z"], family=f["family"], secret_pairs=f["secret_pairs"],
                            delta_z=self.delta_z, sigma=self.sigma, mechanism="WassersteinExponential",
                            assumptions=assumptions,
                            provenance=Provenance(mechanism="WassersteinExponential", theorem=self.theorem,
                                                  sensitivity=self.delta_z, refs=self.refs))

    @property
    def scale(self) -> float:
        """2 sigma / eps (the exponent is -L / scale); 0 when sigma = 0."""
        return round_up(2.0 * self.sigma / self.eps, 2)

    # ---------------------------------------------------------------- finite support
    def log_weights(self, t: Any) -> np.ndarray:
        """Unnormalised log-probabilities of the support points for statistic t (finite support)."""
        if self.support is None:
            raise ParameterError("support", None, "a finite-support mechanism")
        L = _loss_values(self.loss, self.support, t)
        if self.sigma == 0.0:
            # Delta_z = 0: point mass on the minimisers of the loss among points of the base measure
            allowed = np.isfinite(self.log_base) if self.log_base is not None else np.ones(L.shape, bool)
            lw = np.where(allowed & (L == L[allowed].min()), 0.0, -np.inf)
        else:
            lw = -L / self.scale
        if self.log_base is not None:
            lw = lw + self.log_base
        if not np.isfinite(lw).any():
            raise ParameterError("x", t, "a statistic with finite normaliser N(x) > 0 under the base measure")
        return lw

    def log_density(self, y: Any, t: Any) -> np.ndarray:
        """log f_x(y) including the normaliser (needed by inference). Finite support: y are support
        points (index by value); interval: y real."""
        if self.space is not None:
            yy = np.asarray(y, dtype=np.float64)
            tt = np.asarray(t, dtype=np.float64)
            if self.sigma == 0.0:
                return np.where(np.all(np.atleast_1d(yy == tt), axis=-1), 0.0, -np.inf)
            diff = (yy - tt).reshape(-1, self.dim)
            if self.space == "Z^d":
                lp = D.discrete_laplace_logpmf(diff, 1.0 / self.scale).sum(-1)
                return cast(np.ndarray, lp.reshape(yy.shape[:-1] if self.dim > 1 else yy.shape))
            norm = {"abs": 1, "l1": 1, "l2": 2, "linf": np.inf}[self.loss]
            return D.knorm_logpdf(diff, norm, self.scale).reshape(yy.shape[:-1] if self.dim > 1 else yy.shape)
        if self.interval is not None:
            lo, hi = self.interval
            if self.sigma == 0.0:
                return np.where(np.asarray(y, dtype=np.float64) == min(max(float(t), lo), hi), 0.0, -np.inf)
            return D.truncated_laplace_logpdf(y, t, self.scale, lo, hi)
        lw = self.log_weights(t)
        lp = lw - logsumexp(lw)
        yv = np.asarray(y, dtype=np.float64)
        sup = self.support
        assert sup is not None  # finite support (the other output spaces returned above)
        if sup.ndim == 1:
            idx = np.searchsorted(sup, yv) if np.all(np.diff(sup) > 0) else None
            if idx is None:
                match = (sup[None, :] == yv.reshape(-1, 1))
            else:
                idx = np.clip(idx, 0, sup.size - 1)
                ok = sup[idx] == yv
                return np.where(ok, lp[idx], -np.inf)
        else:
            match = np.all(sup[None, :, :] == yv.reshape(-1, 1, sup.shape[1]), axis=2)
        hit = match.any(1)
        out = np.where(hit, lp[np.argmax(match, axis=1)], -np.inf)
        return out.reshape(yv.shape[:-1] if sup.ndim == 2 else yv.shape)

    def release(self, t: Any, *, size: int | None = None, rng: Any = None, threads: int | None = None) -> Any:
        """One draw (or ``size`` draws) of Y given the statistic T(x) = t."""
        if self.space is not None:
            tt = V.float_array("x", t, ndim=(0, 1))
            if tt.size != self.dim:
                raise ParameterError("x", t, f"a statistic of dimension {self.dim}")
            tt = tt.reshape(self.dim)
            n = 1 if size is None else V.integer("size", size, lo=0)
            if self.sigma == 0.0:
                out = np.broadcast_to(tt, (n, self.dim)).copy()
            elif self.space == "Z^d":
                if not np.all(tt == np.round(tt)):
                    raise ParameterError("x", t, "an integer statistic on Z^d")
                vals = np.broadcast_to(tt.astype(np.int64), (n, self.dim)).copy()
                out = D.discrete_laplace_sample(1.0 / self.scale, values=vals,
                                                rng=rng, threads=threads)
            else:
                norm = {"abs": 1, "l1": 1, "l2": 2, "linf": np.inf}[self.loss]
                out = D.knorm_sample(norm, self.dim, self.scale, n, center=tt, rng=rng, threads=threads)
            if self.dim == 1:
                out = out[:, 0]
            return out[0] if size is None else out
        if self.interval is not None:
            lo, hi = self.interval
            t1 = V.real("x", t)
            if self.sigma == 0.0:
                v0 = min(max(t1, lo), hi)
                return v0 if size is None else np.full(V.integer("size", size, lo=0), v0)
            return D.truncated_laplace_sample(t1, self.scale, lo, hi, size, rng=rng, threads=threads)
        lw = np.ascontiguousarray(self.log_weights(t))
        n = 1 if size is None else V.integer("size", size, lo=0)
        idx = np.empty(n, dtype=np.int64)
        k0, k1, w, start = _streams.take(rng, n)
        _streams._C.categorical_fill(lw, k0, k1, w, start, idx, _streams.threads(threads))
        assert self.support is not None
        out = self.support[idx]
        return out[0] if size is None else out

    def sample_indices(self, log_weights: Any, size: int, *, rng: Any = None, threads: int | None = None) -> np.ndarray:
        """Raw exact categorical draws from given log-weights (the kernel behind ``release``)."""
        lw = np.ascontiguousarray(V.float_array("log_weights", log_weights, ndim=1, finite=False))
        idx = np.empty(V.integer("size", size, lo=0), dtype=np.int64)
        k0, k1, w, start = _streams.take(rng, idx.size)
        _streams._C.categorical_fill(lw, k0, k1, w, start, idx, _streams.threads(threads))
        return idx

    def __repr__(self) -> str:
        kind = f"support of {self.support.shape[0]} points" if self.support is not None else f"interval {self.interval}"
        return f"WassersteinExponential(eps={self.eps}, delta_z={self.delta_z}, sigma={self.sigma}, {kind})"


_MODES = {"naive": 0, "congenial": 1, "prior": 2}


class LatticeWEM(TPMechanism):
    """WEM on the case-study lattice (Seeman et al. §4.2): y = (cases_1..J, deaths_1..J) in Z^{2J},

        p(y) proportional to exp(-eps ||y - x||_2 / (2 sigma)) nu_z(y),

    base ``"naive"`` (counting measure on Z^{2J}), ``"congenial"`` (counting measure on
    {sum_j c_j = s, c_j >= d_j >= 0}) or ``"prior"`` (congenial with Dirichlet-multinomial weights on
    the cases, concentration a_j > 0). Sampled by Metropolis-Hastings started from a public point
    (never from x): approximate, and the guarantee is flagged so. sigma defaults to Delta_z (norm loss).
    """

    theorem = "Seeman et al. 2024, Thm 9 (MCMC sampler)"
    refs = (Ref("seeman2024", "Thm 9"),)

    def __init__(self, eps: float, framework: TPFramework | None = None, *, delta_z: float | None = None,
                 sigma: float | None = None, base: str = "congenial", steps_per_dim: int = 400):
        self.eps = V.positive("eps", eps)
        self.delta_z, self.sigma, self.framework = _resolve_sigma(framework, delta_z, sigma, "l2")
        if self.sigma <= 0:
            raise ParameterError("sigma", self.sigma, "sigma > 0 for the lattice sampler")
        if base not in _MODES:
            raise ParameterError("base", base, f"one of {sorted(_MODES)}")
        self.base = base
        self.steps_per_dim = V.integer("steps_per_dim", steps_per_dim, lo=1)
        f = self.framework.guarantee_fields()
        self.guarantee = TP(self.eps, z=f["z"], family=f["family"], secret_pairs=f["secret_pairs"],
                            delta_z=self.delta_z, sigma=self.sigma, mechanism=f"LatticeWEM[{base}]",
                            assumptions=self.framework.assumptions + ("sampler approximate (MCMC)",),
                            provenance=Provenance(mechanism="LatticeWEM", theorem=self.theorem,
                                                  sensitivity=self.delta_z, refs=(Ref("seeman2024", "Thm 9"),)))

    @property
    def kappa(self) -> float:
        """eps / (2 sigma), rounded down (a flatter target is the safe side)."""
        return math.nextafter(self.eps / (2.0 * self.sigma), 0.0)

    @staticmethod
    def public_start(total: int, shares: Any) -> np.ndarray:
        """A data-independent start: cases = largest-remainder allocation of the public total by public
        shares (e.g. last month's), deaths = 0."""
        sh = V.float_array("shares", shares, ndim=1)
        if (sh < 0).any() or sh.sum() <= 0:
            raise ParameterError("shares", shares, "non-negative shares with a positive sum")
        raw = total * sh / sh.sum()
        c = np.floor(raw).astype(np.int64)
        rem = int(total - c.sum())
        c[np.argsort(-(raw - c), kind="stable")[:rem]] += 1
        return np.concatenate([c, np.zeros_like(c)])

    def release(self, cases: Any, deaths: Any, total: Any, *, start: Any = None, concentration: Any = None,
                shares: Any = None, steps: int | None = None, max_step: Any = None, rng: Any = None,
                threads: int | None = None, return_acceptance: bool = False) -> Any:
        """Draws for m independent problems: ``cases``, ``deaths`` of shape (m, J) (or (J,)), ``total``
        (m,) the public totals, ``concentration`` (m, J) for base "prior", ``start`` (m, 2J) public
        starting points (default :meth:`public_start` with ``shares``, else equal shares).
        Returns (cases, deaths) int64 arrays (and the acceptance rates if asked)."""
        x_c = np.asarray(cases)
        x_d = np.asarray(deaths)
        one = x_c.ndim == 1
        x_c, x_d = np.atleast_2d(x_c), np.atleast_2d(x_d)
        if x_c.shape != x_d.shape or x_c.ndim != 2:
            raise ParameterError("deaths", f"shape {x_d.shape}", f"the shape of cases {x_c.shape}")
        for nm, arr in (("cases", x_c), ("deaths", x_d)):
            if not np.issubdtype(arr.dtype, np.integer):
                raise ParameterError(nm, arr.dtype, "integer counts")
        m, J = x_c.shape
        s = np.ascontiguousarray(np.broadcast_to(np.asarray(total, dtype=np.int64), (m,)))
        if self.base != "naive":
            if (x_d < 0).any() or (x_c < x_d).any() or not np.array_equal(x_c.sum(1), s):
                raise ParameterError("total", total, "public information consistent with the data "
                                     "(cases sum to the total, cases >= deaths >= 0)")
        x = np.ascontiguousarray(np.concatenate([x_c, x_d], axis=1), dtype=np.int64)
        if start is None:
            sh = np.ones(J) if shares is None else np.asarray(shares, dtype=np.float64)
            sh = np.broadcast_to(sh, (m, J))
            y0 = np.stack([self.public_start(int(s[r]), sh[r]) for r in range(m)])
        else:
            y0 = np.asarray(start)
            if y0.shape != (m, 2 * J) or not np.issubdtype(y0.dtype, np.integer):
                raise ParameterError("start", f"array {y0.shape} {y0.dtype}", f"an integer array of shape {(m, 2 * J)}")
        y0 = np.ascontiguousarray(y0, dtype=np.int64)
        a = None
        if self.base == "prior":
            if concentration is None:
                raise ParameterError("concentration", None, "Dirichlet concentrations (m, J) for base 'prior'")
            conc = V.float_array("concentration", concentration, ndim=(1, 2))
            a = np.ascontiguousarray(np.broadcast_to(conc, (m, J)),
                                     dtype=np.float64)
            if (a <= 0).any():
                raise ParameterError("concentration", "values <= 0", "concentrations > 0 (add a pseudo-count)")
        elif concentration is not None:
            raise ParameterError("concentration", "given", f"None for base {self.base!r} (no prior weights)")
        n_steps = self.steps_per_dim * 2 * J if steps is None else V.integer("steps", steps, lo=0)
        if max_step is None:
            # proposal size of the order of the per-coordinate spread sqrt(2J)/kappa, at most the total
            ms = max(1, int(round(math.sqrt(2 * J) / self.kappa / 4)))
            max_step = np.minimum(ms, np.maximum(1, s)) if self.base != "naive" else np.full(m, ms)
        ms_arr = np.ascontiguousarray(np.broadcast_to(np.asarray(max_step, dtype=np.int64), (m,)))
        out = np.empty((m, 2 * J), dtype=np.int64)
        acc = np.empty(m, dtype=np.int64)
        k0, k1, w, st = _streams.take(rng, m)
        _streams._C.wem_lattice_mh(_MODES[self.base], J, x, s, a, y0, self.kappa, ms_arr, n_steps,
                                   k0, k1, w, st, out, acc, _streams.threads(threads))
        c, d = out[:, :J], out[:, J:]
        if one:
            c, d, acc = c[0], d[0], acc[:1]
        if return_acceptance:
            return c, d, acc / max(n_steps, 1)
        return c, d

    def __repr__(self) -> str:
        return f"LatticeWEM(eps={self.eps}, sigma={self.sigma}, base={self.base!r})"
