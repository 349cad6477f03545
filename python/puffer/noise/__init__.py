"""Additive noise families and their Rényi shift divergences.

Additive noise families and their Renyi shift divergences (Pierquin et al. 2024,
Thm 3.3 / Cor 3.1 / Lemma B.1; Chaudhuri et al. 2019).

Each family is an immutable value with ``logpdf``, ``pdf``, ``cdf``, ``ppf``, ``scale``,
``natural_norm``; ``renyi_shift(alpha, v)`` = D_alpha(zeta(. - v) || zeta), ``R(alpha, z)``
= sup over |v| <= z, ``kl_shift(v)``, ``epsilon(alpha, sensitivity)`` (the General Wasserstein
mechanism's epsilon), ``rpp_curve(sensitivity)``, ``calibrate(...)`` and ``iid(d)``.
Every divergence returned is a certified upper bound (closed forms rounded up; quadrature
with its error bound added), computed by the C++ kernel in ``cpp/renyi``.

>>> from puffer.noise import Laplace, Cauchy
>>> round(Laplace(0.01).renyi_shift(10.0, 1.0), 10)   # naive quadrature overflows here
99.9286829015
>>> b = Laplace(1.0).calibrate(alpha=float("inf"), eps=1.0, sensitivity=1.0).b  # Delta/eps, rounded up
>>> 1.0 <= b <= 1.0 + 1e-14
True
"""
from typing import cast

from . import profile
from ._base import NoiseFamily
from .custom import Custom
from .families import Cauchy, Gaussian, GenCauchy, GenGaussian, Laplace, Logistic, StudentT
from .product import IID

__all__ = ["profile", "NoiseFamily", "Gaussian", "Laplace", "Cauchy", "GenCauchy", "StudentT", "GenGaussian",
           "Logistic", "Custom", "IID"]

_BY_NAME = {"gaussian": Gaussian, "laplace": Laplace, "cauchy": Cauchy, "logistic": Logistic,
            "gencauchy": GenCauchy, "studentt": StudentT, "student_t": StudentT,
            "gengaussian": GenGaussian}


def as_noise(noise: object, *, name: str = "noise", calibrating: bool = False) -> NoiseFamily:
    """A noise family from an instance, a family class or a family name.

    ``calibrating=True`` is for a mechanism that calibrates the scale (a target ``eps=``): the
    family is what counts, so ``Gaussian``, ``"gaussian"`` and ``Gaussian(1.0)`` (the unit
    instance, which carries the shape parameters of GenCauchy's k, StudentT's nu, GenGaussian's
    beta) are equivalent, and an instance with another scale is refused: the calibration would
    replace that scale, silently.

    >>> as_noise("Gaussian"), as_noise(Laplace)
    (Gaussian(sigma=1.0), Laplace(b=1.0))
    >>> as_noise(Gaussian(5.0), calibrating=True)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'noise' = Gaussian(sigma=5.0): expected a noise family to calibrate ...
    """
    from ..errors import ParameterError, ParameterTypeError

    if isinstance(noise, NoiseFamily):
        if calibrating and noise.scale != 1.0:
            raise ParameterError(
                name, noise, f"a noise family to calibrate ({type(noise).__name__}, its name, or an instance at "
                f"scale 1.0 carrying the shape parameters): the target eps= sets the scale, so {noise.scale!r} "
                "would be ignored. For the guarantee this scale gives, leave out eps/alpha/delta (the mechanism's "
                "guarantee is then the RPP curve of this noise; .to_pp(delta) gives (eps, delta)-PP)")
        return noise
    cls = None
    if isinstance(noise, str):
        cls = _BY_NAME.get(noise.strip().lower().replace("-", "_"))
        if cls is None:
            raise ParameterError(name, noise, f"a noise family name ({', '.join(sorted(set(_BY_NAME)))}) "
                                 "or a puffer.noise instance")
    elif isinstance(noise, type) and issubclass(noise, NoiseFamily):
        cls = noise
    if cls is None:
        raise ParameterTypeError(name, noise, "a puffer.noise family instance (e.g. Gaussian(1.0)), "
                                 "family class or name")
    if cls in (GenCauchy, StudentT, GenGaussian):
        shape = {GenCauchy: "k", StudentT: "nu", GenGaussian: "beta"}[cls]
        raise ParameterError(name, noise, f"an instance: {cls.__name__} has a shape parameter ({shape}), "
                             f"e.g. {cls.__name__}(" + ("1.0, 3.0" if cls is GenCauchy else "3.0, 1.0") + ")")
    if cls is Custom or cls is IID:
        raise ParameterError(name, noise, f"an instance of {cls.__name__} (it needs constructor arguments)")
    # every family without a shape parameter takes its scale as its one argument
    return cast(NoiseFamily, cls(1.0))


__all__ += ["as_noise"]
