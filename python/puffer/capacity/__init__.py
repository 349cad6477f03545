"""Capacity bounded differential privacy (Chaudhuri, Imola, Machanavajjhala, NeurIPS 2019).

Privacy measured only against adversaries whose tests lie in a function class H (``Lin()``,
``Poly(k)``, ``All()``): (H, Gamma)-capacity bounded privacy with parameter eps (Def 3) asks
Gamma^H(A(D), A(D')) <= eps, with Gamma^H the H-restricted f-divergence (eq. 2) or Rényi
divergence (eq. 3, Lemma 3).

* :mod:`.divergences` — f-divergences, conjugates, Rényi <-> alpha-divergence; Thms 8, 11, 12.
* :mod:`.classes` — function classes, flags, the composition check of Thm 1.
* :mod:`.restricted` — ``restricted_kl`` (Lemma 1; Thms 9, 10) and ``restricted_renyi``
  (Lemma 3; certified exact solver, alpha = 2 Gram closed form, d-dim Gaussian reduction).
* :mod:`.bounds` — Thm 13 / Cor 2 as printed (**unsound** for alpha > 2 at small shifts), the
  corrected Thm 13, and a sound ratio-form bound.
* :mod:`.mechanisms` — guarantees of the Laplace / Gaussian mechanisms (Thms 9, 10, 13) and of
  the matrix mechanism (Thm 5).
* :mod:`.calibrate` — noise for a target (Lambert W for (lin, KL); bisection for Rényi).
* :mod:`.algebra` — post-processing (Thm 1), mixtures (Thm 2), composition (Thms 3, 4), the
  IPM and generalisation bounds (Thms 6, 7).
* :mod:`.figures` — Table 1 and Figures 1a, 1b, 2a, 2b; ``puffer capacity-table``.

>>> from puffer import capacity as C
>>> g = C.laplace_lin_renyi(1.0, 1.0, 3.0)
>>> round(g.eps, 6), g.kind, g.sound
(0.415187, 'exact', True)
"""
from ..guarantees.capacity import CapacityBounded
from .algebra import (
                      compose_parallel,
                      compose_sequential,
                      from_unrestricted,
                      generalization_gap_bound,
                      ipm_from_restricted_kl,
                      mixture,
                      post_process,
)
from .bounds import best_sound_bound, corrected_bound, paper_bound, sound_bound
from .calibrate import (
                      calibrate_gaussian_lin_kl,
                      calibrate_gaussian_lin_renyi,
                      calibrate_laplace_lin_kl,
                      calibrate_laplace_lin_renyi,
                      laplace_lin_kl_inverse,
)
from .classes import AffineMaps, All, FunctionClass, Lin, Poly, PolynomialMaps, contains_composition, function_class
from .divergences import (
                      alpha_div_to_renyi,
                      conjugate,
                      f_divergence,
                      gaussian_kl,
                      gaussian_renyi,
                      generator,
                      laplace_kl,
                      laplace_renyi,
                      laplace_renyi_lower_bound,
                      renyi_to_alpha_div,
)
from .figures import figure_data, plot, table1
from .mechanisms import (
                      MatrixMechanism,
                      gaussian_lin_kl,
                      gaussian_lin_renyi,
                      gaussian_poly_renyi,
                      laplace_lin_kl,
                      laplace_lin_renyi,
                      laplace_poly_renyi,
                      matrix_mechanism_guarantee,
)
from .restricted import Gaussian, Laplace, RestrictedDivergence, restricted_kl, restricted_renyi

__all__ = [
    "CapacityBounded", "FunctionClass", "Lin", "Poly", "All", "AffineMaps", "PolynomialMaps",
    "contains_composition", "function_class", "Laplace", "Gaussian", "RestrictedDivergence",
    "restricted_kl", "restricted_renyi", "generator", "conjugate", "f_divergence", "alpha_div_to_renyi",
    "renyi_to_alpha_div", "laplace_kl", "gaussian_kl", "laplace_renyi", "laplace_renyi_lower_bound", "gaussian_renyi",
    "paper_bound", "corrected_bound", "sound_bound", "best_sound_bound",
    "laplace_lin_kl", "gaussian_lin_kl", "laplace_lin_renyi", "gaussian_lin_renyi", "laplace_poly_renyi",
    "gaussian_poly_renyi", "matrix_mechanism_guarantee", "MatrixMechanism",
    "calibrate_laplace_lin_kl", "calibrate_gaussian_lin_kl", "calibrate_laplace_lin_renyi",
    "calibrate_gaussian_lin_renyi", "laplace_lin_kl_inverse",
    "post_process", "mixture", "compose_parallel", "compose_sequential", "ipm_from_restricted_kl",
    "generalization_gap_bound", "from_unrestricted", "figure_data", "plot", "table1",
]
