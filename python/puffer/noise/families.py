"""Built-in additive noise families on R: Gaussian, Laplace, Cauchy, Student-t and more.

Built-in additive noise families on R (Pierquin et al. 2024; Chaudhuri et al. 2019).

=============  =================================================  ==========  ==========================
family         density                                            R_alpha     natural norm (iid(d))
=============  =================================================  ==========  ==========================
Gaussian       ``N(0, sigma^2)``                                  closed      l2 (Lemma B.1, exact)
Laplace        ``exp(-|x|/b) / (2b)``                             closed      l1 (Lemma B.1, exact)
Cauchy         ``gamma / (pi (gamma^2 + x^2))``                   quadrature  l2 (certified bound)
GenCauchy      ``beta_k (1 + (x/gamma)^2)^(-k/2)``, k > 1         quadrature  l2 (certified bound)
StudentT       t_nu scaled by ``scale``                           quadrature  l2 (certified bound)
GenGaussian    ``exp(-|x/scale|^beta) beta/(2 scale G(1/beta))``  quadrature  lbeta (certified bound)
Logistic       ``1 / (4 scale cosh^2(x / (2 scale)))``            quadrature  l1 (certified bound)
=============  =================================================  ==========  ==========================

GenCauchy uses gamma as a *scale* (Pierquin et al. 2024: the paper's lambda is an
inverse scale in the density but a scale in Lemma D.1; we implement the corrected
convention, beta_{k,gamma} = Gamma(k/2) / (gamma sqrt(pi) Gamma((k-1)/2))). Its R_alpha is
the *exact* divergence by quadrature, not the Legendre bound of Lemma D.1 (which is only an
upper bound for k != 2 and has a log(c_k)/(alpha - 1) floor).

GenGaussian(beta=2, scale=s) is N(0, s^2/2); GenGaussian(beta=1, s) is Laplace(s).
"""
from __future__ import annotations

import abc
import math
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from .. import _validate as V
from .._core import renyi as _K
from ..errors import ParameterError
from ._base import NoiseFamily, _is_scalar

if TYPE_CHECKING:
    from ._base import F64


def _st() -> Any:
    import scipy.stats
    return scipy.stats

__all__ = ["Gaussian", "Laplace", "Cauchy", "GenCauchy", "StudentT", "GenGaussian", "Logistic"]

_THREADS = 0


class _Kernel(NoiseFamily):
    """A family computed by the C++ kernel (cpp/renyi): code + standardized shape (k, nu, beta)."""

    __slots__ = ()
    _code: int = -1

    def _shape(self) -> tuple[float, float, float]:
        return (0.0, 0.0, 0.0)

    def _shift_div(self, alpha: F64, u: F64) -> F64:
        k, nu, beta = self._shape()
        a = np.ascontiguousarray(alpha, dtype=np.float64)
        uu = np.ascontiguousarray(u, dtype=np.float64)
        if a.size == 1:
            return np.array([_K.shift_divergence1(self._code, k, nu, beta, float(a[0]), float(uu[0]))])
        return _K.shift_divergence(self._code, k, nu, beta, a, uu, _THREADS)

    def _shift1(self, alpha: float, v: float) -> float:
        k, nu, beta = self._shape()
        return _K.shift_divergence1(self._code, k, nu, beta, alpha, abs(v) / self.scale)

    def _max_shift(self, alpha: float, eps: float) -> float:
        k, nu, beta = self._shape()
        return _K.max_shift(self._code, k, nu, beta, float(alpha), float(eps))

    # densities via scipy.stats (vectorised, well tested), imported on first use: `import puffer`
    # and the samplers must not pay for scipy.stats
    @abc.abstractmethod
    def _dist(self) -> Any:
        """The equivalent frozen scipy.stats distribution."""

    @overload
    def logpdf(self, x: float) -> float: ...
    @overload
    def logpdf(self, x: Any) -> float | F64: ...
    def logpdf(self, x: Any) -> float | F64:
        """Log-density at x (vectorised)."""
        return self._dist().logpdf(V.float_array("x", x, finite=False, allow_empty=True)) if not _is_scalar(x) \
            else float(self._dist().logpdf(V.real("x", x, allow_inf=True)))

    @overload
    def pdf(self, x: float) -> float: ...
    @overload
    def pdf(self, x: Any) -> float | F64: ...
    def pdf(self, x: Any) -> float | F64:
        """Density at x (vectorised)."""
        return self._dist().pdf(V.float_array("x", x, finite=False, allow_empty=True)) if not _is_scalar(x) \
            else float(self._dist().pdf(V.real("x", x, allow_inf=True)))

    @overload
    def cdf(self, x: float) -> float: ...
    @overload
    def cdf(self, x: Any) -> float | F64: ...
    def cdf(self, x: Any) -> float | F64:
        """Distribution function at x (vectorised)."""
        return self._dist().cdf(V.float_array("x", x, finite=False, allow_empty=True)) if not _is_scalar(x) \
            else float(self._dist().cdf(V.real("x", x, allow_inf=True)))

    @overload
    def ppf(self, q: float) -> float: ...
    @overload
    def ppf(self, q: Any) -> float | F64: ...
    def ppf(self, q: Any) -> float | F64:
        """Quantile function (vectorised); q in [0, 1]."""
        qq = V.float_array("q", q, allow_empty=True)
        if ((qq < 0) | (qq > 1)).any():
            raise ParameterError("q", float(qq[np.argmax((qq < 0) | (qq > 1))]), "probabilities in [0, 1]")
        r = self._dist().ppf(qq)
        return float(r) if _is_scalar(q) else r


class Gaussian(_Kernel):
    """N(0, sigma^2) noise. s_alpha(v) = alpha v^2 / (2 sigma^2) (Pierquin et al. 2024, Cor 3.1; Chaudhuri et al. 2019, Thm 12); R_inf = inf (no pure PP). Natural norm l2.

    >>> Gaussian(1.3).renyi_shift(5.0, 2.0)  # Pierquin et al. 2024: 5.917159763313609 (rounded up)
    5.917159763313616
    """

    __slots__ = ("sigma",)
    _param_names = ("sigma",)
    _code = int(_K.Family.gaussian)
    natural_norm = 2.0

    def __init__(self, sigma: float):
        self.sigma = V.positive("sigma", sigma)
        self._freeze()

    @property
    def scale(self) -> float:
        return self.sigma

    def _with_scale(self, scale: float) -> Gaussian:
        return Gaussian(scale)

    def _dist(self) -> Any:
        return _st().norm(scale=self.sigma)

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        return "gaussian", {"sigma": self.sigma}


class Laplace(_Kernel):
    """Laplace noise exp(-|x|/b)/(2b). s_alpha from Pierquin et al. 2024, Cor 3.1 in the cancellation-free
    form (series for alpha v/b < 1/2, log1p form otherwise); R_inf(z) = z/b. Natural norm l1.

    >>> round(Laplace(1.0).renyi_shift(10.0, 1.0), 14)  # anchors: 0.9286829020966803
    0.92868290209668
    """

    __slots__ = ("b",)
    _param_names = ("b",)
    _code = int(_K.Family.laplace)
    natural_norm = 1.0

    def __init__(self, b: float):
        self.b = V.positive("b", b)
        self._freeze()

    @property
    def scale(self) -> float:
        return self.b

    def _with_scale(self, scale: float) -> Laplace:
        return Laplace(scale)

    def _dist(self) -> Any:
        return _st().laplace(scale=self.b)

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        return "laplace", {"b": self.b}


class GenCauchy(_Kernel):
    """Generalized Cauchy noise (Rider 1957; Pierquin et al. 2024, Def 4.6), gamma = scale, k > 1:
    density Gamma(k/2) / (gamma sqrt(pi) Gamma((k-1)/2)) * (1 + (x/gamma)^2)^(-k/2), i.e.
    gamma T_{k-1} / sqrt(k - 1). k = 2 is Cauchy(gamma).

    Corrected parametrization ([!] Pierquin et al. 2024: the paper's lambda is used both as inverse
    scale and as scale). s_alpha is computed exactly by certified quadrature;
    R_inf(z) = k asinh(z / (2 gamma)). Natural norm l2 (Pierquin et al. 2024, Cor 4.1).
    """

    __slots__ = ("gamma", "k")
    _param_names: tuple[str, ...] = ("gamma", "k")
    _code = int(_K.Family.student)
    natural_norm = 2.0

    def __init__(self, gamma: float, k: float):
        self.gamma = V.positive("gamma", gamma)
        self.k = V.real("k", k, lo=1.0, lo_open=True, expected="a tail exponent k > 1 (normalizable density)")
        self._freeze()

    @property
    def _monotone_proved(self) -> bool:  # type: ignore[override]
        # k = 2: exact Legendre form (1/(alpha-1)) log P_{alpha-1}(1 + z^2/2), increasing in z
        return self.k == 2.0

    @property
    def scale(self) -> float:
        return self.gamma

    def _shape(self) -> tuple[float, float, float]:
        return (self.k, 1.0, 0.0)

    def _with_scale(self, scale: float) -> GenCauchy:
        return GenCauchy(scale, self.k)

    def _dist(self) -> Any:
        nu = self.k - 1.0
        return _st().t(nu, scale=self.gamma / math.sqrt(nu))

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        return "gen_cauchy", {"gamma": self.gamma, "k": self.k}


class Cauchy(GenCauchy):
    """Cauchy noise gamma / (pi (gamma^2 + x^2)) (GenCauchy with k = 2).

    s_alpha(v) = (1/(alpha-1)) log P_{alpha-1}(1 + v^2/(2 gamma^2)) (Verdu 2023; Pierquin et al. 2024),
    evaluated by certified quadrature; R_inf(z) = 2 asinh(z/(2 gamma)).

    >>> import math; abs(Cauchy(1.0).renyi_shift(2.0, 1.0) - math.log(1.5)) < 1e-11
    True
    """

    __slots__ = ()
    _param_names: tuple[str, ...] = ("gamma",)

    def __init__(self, gamma: float):
        object.__setattr__(self, "gamma", V.positive("gamma", gamma))
        object.__setattr__(self, "k", 2.0)
        self._freeze()

    def _with_scale(self, scale: float) -> Cauchy:
        return Cauchy(scale)

    def _dist(self) -> Any:
        return _st().cauchy(scale=self.gamma)

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        return "cauchy", {"gamma": self.gamma}


class StudentT(_Kernel):
    """Student-t noise with nu > 0 degrees of freedom, scaled by ``scale``:
    density proportional to (1 + (x/scale)^2 / nu)^(-(nu+1)/2). nu = 1 is Cauchy(scale).

    s_alpha by certified quadrature; R_inf(z) = (nu + 1) asinh(z / (2 scale sqrt(nu))).
    Natural norm l2. Monotonicity of s_alpha in |v| is checked numerically in R (not proved
    for nu != 1).

    >>> round(StudentT(3.0, 1.0).renyi_shift(2.0, 1.0), 11)  # anchors: 0.5516476182862458
    0.55164761829
    """

    __slots__ = ("nu", "_scale")
    _param_names = ("nu", "scale")
    _code = int(_K.Family.student)
    natural_norm = 2.0

    def __init__(self, nu: float, scale: float = 1.0):
        self.nu = V.positive("nu", nu)
        self._scale = V.positive("scale", scale)
        self._freeze()

    @property
    def _monotone_proved(self) -> bool:  # type: ignore[override]
        return self.nu == 1.0

    @property
    def scale(self) -> float:
        return self._scale

    def _shape(self) -> tuple[float, float, float]:
        return (self.nu + 1.0, self.nu, 0.0)

    def _with_scale(self, scale: float) -> StudentT:
        return StudentT(self.nu, scale)

    def _dist(self) -> Any:
        return _st().t(self.nu, scale=self._scale)

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        return "student_t", {"nu": self.nu, "scale": self._scale}


class GenGaussian(_Kernel):
    """Generalized Gaussian (exponential power) noise, beta >= 1:
    density beta / (2 scale Gamma(1/beta)) exp(-|x/scale|^beta) (scipy's ``gennorm``).

    Symmetric log-concave, so s_alpha is non-decreasing in |v| (Pierquin et al. 2024);
    R_inf = inf for beta > 1 (z/scale for beta = 1). Natural norm l_beta (Pierquin et al. 2024, Lemma B.1).
    beta = 1 and beta = 2 use the Laplace and Gaussian closed forms.
    """

    __slots__ = ("beta", "_scale")
    _param_names = ("beta", "scale")
    _code = int(_K.Family.gen_gaussian)

    def __init__(self, beta: float, scale: float = 1.0):
        self.beta = V.real("beta", beta, lo=1.0, expected="a shape beta >= 1 (log-concave)")
        self._scale = V.positive("scale", scale)
        self._freeze()

    @property
    def natural_norm(self) -> float:
        return self.beta

    @property
    def scale(self) -> float:
        return self._scale

    def _shape(self) -> tuple[float, float, float]:
        return (0.0, 0.0, self.beta)

    def _with_scale(self, scale: float) -> GenGaussian:
        return GenGaussian(self.beta, scale)

    def _dist(self) -> Any:
        return _st().gennorm(self.beta, scale=self._scale)

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        return "gen_gaussian", {"beta": self.beta, "scale": self._scale}


class Logistic(_Kernel):
    """Logistic noise, density 1 / (4 scale cosh^2(x / (2 scale))).

    Symmetric log-concave (s_alpha non-decreasing in |v|); log-density 1/scale-Lipschitz, so
    R_inf(z) = z / scale. Natural norm l1 (certified product bound, see IID).
    """

    __slots__ = ("_scale",)
    _param_names = ("scale",)
    _code = int(_K.Family.logistic)
    natural_norm = 1.0

    def __init__(self, scale: float = 1.0):
        self._scale = V.positive("scale", scale)
        self._freeze()

    @property
    def scale(self) -> float:
        return self._scale

    def _with_scale(self, scale: float) -> Logistic:
        return Logistic(scale)

    def _dist(self) -> Any:
        return _st().logistic(scale=self._scale)

    def _sampler_spec(self) -> tuple[str, dict[str, float]]:
        return "logistic", {"scale": self._scale}

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "GenCauchy": (Ref("pierquin2024", "Def 4.6"), Ref("pierquin2024", "Cor 4.1"),),
    "GenGaussian": (Ref("pierquin2024", "Lemma B.1"),),
}
