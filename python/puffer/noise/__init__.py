"""Additive noise families and their Renyi shift divergences (spec 000 §1.1, §1.7, §1.11,
§2.3 Thm 3.3 / Cor 3.1 / Lemma B.1, §2.5; spec 004 §2).

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
from .families import Cauchy, GenCauchy, GenGaussian, Gaussian, Laplace, Logistic, StudentT
from .custom import Custom
from .product import IID
from ._base import NoiseFamily

__all__ = ["NoiseFamily", "Gaussian", "Laplace", "Cauchy", "GenCauchy", "StudentT", "GenGaussian",
           "Logistic", "Custom", "IID"]
