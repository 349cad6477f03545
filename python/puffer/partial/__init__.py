"""Partially private data: epsilon-TP privacy when some information about the data is public.

Partially private data: epsilon-TP privacy (Seeman, Reimherr & Slavkovic, "Formal privacy for
partially private data", arXiv 2204.01102).

A release mixes public information z (published totals, structural facts, earlier releases) with
privatized statistics Y. epsilon-TP is the Pufferfish guarantee indexed by the realised z, over a
family Theta_z of conditional data laws given z (Def 3). Modules, one concept each:

* :mod:`.frameworks` -- PublicInfo, SecretPairs, TPFramework (Theta_z: finite, correlated counts,
  Gaussian conditional, SDL truncations; Lemma 8 restriction).
* :mod:`.sensitivity` -- Delta_z (Thm 9, Eq. 35, Figure 4), sigma(Delta_z), sigma_y.
* :mod:`.distributions` -- discrete/truncated Laplace, K-norm, Dirichlet-multinomial laws and samplers.
* :mod:`.wem` -- the Wasserstein exponential mechanism (Thm 9): finite supports, intervals, the
  case-study lattice (MCMC, approximate).
* :mod:`.knorm` -- the Wasserstein K-norm gradient mechanism (Thm 10).
* :mod:`.additive` -- Song et al.'s additive Wasserstein mechanism; Lemma 8 restricted release.
* :mod:`.postprocess` -- exact l2 projection and controlled rounding to public constraints (§4.1).
* :mod:`.inference` -- Algorithms 1-2 (Thm 16-17), marginal likelihood and MLR test (Thm 15).
* :mod:`.casestudy`, :mod:`.cli` -- the §4 case study on synthetic county x month data.

The guarantee objects (:class:`puffer.guarantees.TP` and its algebra) live in
:mod:`puffer.guarantees.tp`.
"""
from __future__ import annotations

from ..guarantees.tp import (
                             TP,
                             compose_parallel,
                             compose_sequential,
                             post_process,
                             posterior_odds_bounds,
                             restrict,
                             tv_bound,
)
from . import distributions, inference, postprocess, sensitivity
from .additive import AdditiveWasserstein, RestrictedRelease, restrict_to_public
from .distributions import (
                             dirichlet_multinomial_logpmf,
                             dirichlet_multinomial_sample,
                             discrete_laplace_pmf,
                             discrete_laplace_sample,
                             knorm_sample,
)
from .frameworks import PublicInfo, SecretPairs, TPFramework
from .inference import MLRTest, posterior_importance_sampler, posterior_rejection_sampler
from .knorm import KNormGradient
from .postprocess import contraction_effects, controlled_round, project_consistent, two_stage
from .sensitivity import (
                             delta_correlated_counts,
                             delta_gaussian_conditional,
                             delta_sdl_counts,
                             delta_z,
                             gaussian_c1,
                             sigma_lipschitz_loss,
                             sigma_norm_loss,
                             sigma_y_mean,
)
from .wem import LatticeWEM, WassersteinExponential

WassersteinKNormGradient = KNormGradient

__all__ = [
    "TP", "compose_sequential", "compose_parallel", "post_process", "restrict", "posterior_odds_bounds",
    "tv_bound", "PublicInfo", "SecretPairs", "TPFramework", "delta_correlated_counts",
    "delta_gaussian_conditional", "delta_sdl_counts", "delta_z", "gaussian_c1", "sigma_norm_loss",
    "sigma_lipschitz_loss", "sigma_y_mean", "WassersteinExponential", "LatticeWEM", "KNormGradient",
    "WassersteinKNormGradient", "AdditiveWasserstein", "RestrictedRelease", "restrict_to_public", "project_consistent",
    "controlled_round", "two_stage", "contraction_effects", "posterior_rejection_sampler",
    "posterior_importance_sampler", "MLRTest", "discrete_laplace_pmf", "discrete_laplace_sample",
    "knorm_sample", "dirichlet_multinomial_logpmf", "dirichlet_multinomial_sample", "distributions",
    "inference", "postprocess", "sensitivity",
]
