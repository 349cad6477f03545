"""Additive mechanisms around the Wasserstein exponential mechanism.

* :class:`AdditiveWasserstein` -- Song et al. (2017)'s Wasserstein mechanism with the Delta_z of a
  TP framework: T(x) + Laplace(Delta_z / eps) (continuous) or + discrete Laplace of rate eps/Delta_z
  (integer statistics). The normaliser of additive noise does not depend on x, which is why the
  scale is Delta/eps and not the 2 sigma / eps of WEM; the case-study baseline uses the discrete form
  with Delta_Z = 2 (Seeman et al. §4.1).
* :class:`RestrictedRelease` -- Lemma 8 of Seeman et al.: an eps-DP release conditioned (by
  rejection) on satisfying public constraints is 2 eps-TP.

>>> m = AdditiveWasserstein(1.0, delta_z=2.0, discrete=True)
>>> m.release([10, 20], rng=0).dtype
dtype('int64')
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _validate as V
from ..errors import NumericalError, ParameterError, ParameterTypeError, UnboundedSensitivityError
from ..guarantees import Provenance, round_up
from ..guarantees.tp import TP, restrict
from ..refs import Ref
from . import distributions as D
from ._mechanism import TPMechanism
from .frameworks import TPFramework

__all__ = ["AdditiveWasserstein", "RestrictedRelease", "restrict_to_public"]


class AdditiveWasserstein(TPMechanism):
    """T(x) + noise of scale Delta_z / eps (Laplace, or discrete Laplace with ``discrete=True``)."""

    refs = (Ref("song2017", "Wasserstein mechanism (Thm 3.2)"),)

    def _noise_description(self) -> dict[str, Any]:
        return {"family": "discrete_laplace" if self.discrete else "laplace", "scale": self.scale}

    def __init__(self, eps: float, framework: TPFramework | None = None, *, delta_z: float | None = None,
                 discrete: bool = False):
        self.eps = V.positive("eps", eps)
        if (framework is None) == (delta_z is None):
            raise ParameterError("delta_z", delta_z, "exactly one of framework= or delta_z=")
        if framework is None:
            framework = TPFramework.assumed(V.nonneg("delta_z", delta_z, allow_inf=True))
        elif not isinstance(framework, TPFramework):
            raise ParameterTypeError("framework", framework, "a puffer.partial.TPFramework")
        self.framework = framework
        self.delta_z = framework.delta_z
        if math.isinf(self.delta_z):
            raise UnboundedSensitivityError("Delta_z is infinite: no eps-TP additive mechanism")
        if not isinstance(discrete, bool):
            raise ParameterTypeError("discrete", discrete, "True or False")
        self.discrete = discrete
        f = framework.guarantee_fields()
        self.guarantee = TP(self.eps, z=f["z"], family=f["family"], secret_pairs=f["secret_pairs"],
                            delta_z=self.delta_z, mechanism="AdditiveWasserstein", assumptions=framework.assumptions,
                            provenance=Provenance(mechanism="AdditiveWasserstein", sensitivity=self.delta_z,
                                                  refs=(Ref("song2017", "Wasserstein mechanism (Thm 3.2)"),)))

    @property
    def scale(self) -> float:
        """Delta_z / eps (rounded up); the discrete rate is 1/scale."""
        return round_up(self.delta_z / self.eps)

    def release(self, values: Any, *, rng: Any = None, threads: int | None = None) -> np.ndarray:
        if self.delta_z == 0.0:
            return np.array(values, copy=True)
        if self.discrete:
            v = np.asarray(values)
            if not np.issubdtype(v.dtype, np.integer):
                raise ParameterError("values", v.dtype, "integer values for discrete=True")
            # rate eps/Delta rounded down = scale rounded up (more noise)
            return D.discrete_laplace_sample(1.0 / self.scale, values=v, rng=rng, threads=threads)
        from .. import sampling
        return sampling.add_noise(np.asarray(values, dtype=np.float64), ("laplace", {"b": self.scale}), rng=rng)

    def __repr__(self) -> str:
        return f"AdditiveWasserstein(eps={self.eps}, delta_z={self.delta_z}, discrete={self.discrete})"


class RestrictedRelease:
    """Lemma 8: draw from an eps-DP ``release(rng)`` until ``predicate(output)`` holds.

    ``max_tries`` caps the rejection loop (NumericalError when exceeded, with the acceptance seen).
    The guarantee is (2 eps)-TP for the DP scenarios renormalised to the public set.
    """

    def __init__(self, release: Callable[[np.random.Generator], Any], predicate: Callable[[Any], bool],
                 eps_dp: float, *, max_tries: int = 100_000, description: str = "public constraint"):
        if not callable(release) or not callable(predicate):
            raise ParameterTypeError("release", release, "callables release(rng) and predicate(y)")
        self._release, self._pred = release, predicate
        self.eps_dp = V.positive("eps_dp", eps_dp)
        self.max_tries = V.integer("max_tries", max_tries, lo=1)
        self.guarantee = restrict(self.eps_dp, mechanism=f"restricted({description})")
        self.tries = 0

    def release(self, *, rng: Any = None) -> Any:
        g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        for k in range(1, self.max_tries + 1):
            y = self._release(g)
            if self._pred(y):
                self.tries = k
                return y
        raise NumericalError(f"restricted release: no output satisfied the public constraint in {self.max_tries} "
                             "tries (acceptance too small; raise max_tries or use a congenial base measure)")


def restrict_to_public(release: Callable[[np.random.Generator], Any], predicate: Callable[[Any], bool],
                       eps_dp: float, **kw: Any) -> RestrictedRelease:
    """Lemma 8 (Seeman et al. 2024): the eps-DP ``release`` conditioned on ``predicate`` (a public
    constraint), by rejection; the result is (2 eps)-TP. See :class:`RestrictedRelease`."""
    return RestrictedRelease(release, predicate, eps_dp, **kw)
