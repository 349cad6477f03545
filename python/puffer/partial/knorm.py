"""The Wasserstein K-norm gradient mechanism for partially private data.

The Wasserstein K-norm gradient mechanism (Seeman, Reimherr & Slavkovic, "Formal privacy for
partially private data", Thm 10): release Y in R^d with density

    f_X(y) proportional to exp(-eps ||grad L_X(y)||_K / (2 sigma_y(Delta_z)))

which is eps-TP (Thm 9 applied to L* = ||grad L||_K / sigma_y, whose sigma is 1). For the quadratic
loss L_X(y) = (n/2) ||y - T(x)||_2^2 (mean estimation: T = xbar) grad L = n (y - T(x)), so Y = T(x) + V
with V K-norm noise of scale 2 sigma_y / (eps n), and sigma_y = n sup{||T(x) - T(x')||_K : d(x, x') <=
Delta_z} (:func:`~puffer.partial.sensitivity.sigma_y_mean`). K is the l1, l2 or l_inf unit ball;
the sampler is exact (Gamma radius times a uniform point of K, ``cpp/sampling/knorm.cpp``).

>>> m = KNormGradient(1.0, sigma_y=2.0, norm=2, dim=3)
>>> m.scale >= 4.0, round(m.scale, 12)      # rounded up (more noise is the safe side)
(True, 4.0)
>>> m.release([0.0, 0.0, 0.0], rng=1).shape
(3,)
"""
from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, UnboundedSensitivityError
from ..guarantees import Provenance, round_up
from ..guarantees.tp import TP
from ..refs import Ref
from . import distributions as D
from ._mechanism import TPMechanism
from .frameworks import TPFramework

__all__ = ["KNormGradient"]


class KNormGradient(TPMechanism):
    """WKNG (Thm 10) for a quadratic loss with gradient n (y - T(x)).

    Parameters
    ----------
    eps : float
        The target eps > 0 of eps-TP.
    sigma_y : float
        The gradient sensitivity sigma_y(Delta_z) (in the K-norm); use
        ``KNormGradient.for_mean(eps, n, mean_sensitivity, ...)`` to derive it.
    norm : 1, 2 or inf
        The K-norm (l1, l2 or l-infinity ball) of the noise.
    dim : int
        The dimension d of the released vector.
    n : int
        The curvature of the loss (number of records of the quadratic loss).
    framework : TPFramework, optional
        Recorded in the guarantee (its Delta_z, z, family, pairs).
    """

    theorem = "Seeman et al. 2024, Thm 10"
    refs = (Ref("seeman2024", "Thm 10"),)

    def _noise_description(self) -> dict[str, Any]:
        return {"family": "knorm", "norm": str(self.norm), "dim": self.dim, "scale": self.scale}

    def __init__(self, eps: float, sigma_y: float, *, norm: Any = 2, dim: int, n: int = 1,
                 framework: TPFramework | None = None):
        self.eps = V.positive("eps", eps)
        self.sigma_y = V.nonneg("sigma_y", sigma_y, allow_inf=True)
        if math.isinf(self.sigma_y):
            raise UnboundedSensitivityError("sigma_y(Delta_z) is infinite: no eps-TP K-norm mechanism")
        self.norm = norm
        self._code = D.norm_code(norm)
        self.dim = V.integer("dim", dim, lo=1)
        self.n = V.integer("n", n, lo=1)
        self.framework = framework if framework is not None else TPFramework(
            None, "unspecified", "unspecified", delta_z=0.0, assumptions=("sigma_y given directly",))
        f = self.framework.guarantee_fields()
        self.guarantee = TP(self.eps, z=f["z"], family=f["family"], secret_pairs=f["secret_pairs"],
                            delta_z=f["delta_z"] if framework is not None else None, sigma=self.sigma_y,
                            mechanism="KNormGradient", assumptions=self.framework.assumptions,
                            provenance=Provenance(mechanism="KNormGradient", theorem=self.theorem,
                                                  sensitivity=self.sigma_y, refs=(Ref("seeman2024", "Thm 10"),)))

    @classmethod
    def for_mean(cls, eps: float, n: int, mean_sensitivity: float, *, norm: Any = 2, dim: int,
                 framework: TPFramework | None = None) -> KNormGradient:
        """Mean estimation: sigma_y = n * sup ||xbar - xbar'||_K over d(x, x') <= Delta_z."""
        from .sensitivity import sigma_y_mean
        return cls(eps, sigma_y_mean(n, mean_sensitivity), norm=norm, dim=dim, n=n, framework=framework)

    @property
    def scale(self) -> float:
        """The K-norm scale s = 2 sigma_y / (eps n) of the noise (rounded up)."""
        return round_up(2.0 * self.sigma_y / (self.eps * self.n), 2) if self.sigma_y > 0 else 0.0

    def _center(self, center: Any) -> np.ndarray:
        c = V.float_array("center", center, ndim=(1, 2))
        if c.shape[-1] != self.dim:
            raise ParameterError("center", f"array of shape {c.shape}", f"last dimension {self.dim} (= dim)")
        return c

    def release(self, center: Any, *, size: int | None = None, rng: Any = None, threads: int | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
        """Y = T(x) + V for the minimiser ``center`` = T(x) of shape (dim,) (or (m, dim): one draw
        per row); ``size`` draws around one centre otherwise."""
        c = self._center(center)
        if c.ndim == 2:
            if size is not None:
                raise ParameterError("size", size, "None when center has one row per draw")
            size_eff = c.shape[0]
        else:
            size_eff = size
        if self.sigma_y == 0.0:
            res = np.broadcast_to(c, (1 if size_eff is None else size_eff, self.dim)).copy()
            if out is not None:
                out[...] = res.reshape(out.shape)
                return out
            return cast(np.ndarray, res[0] if (size_eff is None and c.ndim == 1) else res)
        res = D.knorm_sample(self.norm, self.dim, self.scale, size_eff if size_eff is not None else None,
                             center=c, rng=rng, threads=threads,
                             out=None if out is None else out.reshape(-1, self.dim))
        return res if out is None else out

    def log_density(self, y: Any, center: Any) -> np.ndarray:
        """log f_x(y) including the normaliser log(s^d d! vol(K))."""
        yy = V.float_array("y", y, ndim=(1, 2))
        c = self._center(center)
        if self.sigma_y == 0.0:
            return np.where(np.all(yy == c, axis=-1), 0.0, -np.inf)
        return D.knorm_logpdf(yy - c, self.norm, self.scale)

    def __repr__(self) -> str:
        return f"KNormGradient(eps={self.eps}, sigma_y={self.sigma_y}, norm={self.norm}, dim={self.dim}, n={self.n})"
