"""Calibrated Pufferfish mechanisms.

* :mod:`.wasserstein` — Pierquin et al. 2024 (Pierquin et al.): the Wasserstein mechanism (Song et al.),
  the General Wasserstein Mechanism (Thm 3.3 / Cor 3.1), its approximate (Thm 4.3) and
  distribution-aware (Thm 4.5) relaxations.
* :mod:`.kantorovich` — Ding 2022 (Ding 2022): Lemma 1 / Theorem 1 (Laplace and general
  exponential-mechanism noise), Theorem 2 (relaxed), Theorem 3 (Gaussian), and the
  support-diameter DP baseline.
* :mod:`.cauchy` — Pierquin et al. 2024, Cor 4.1 (Cauchy mechanism, corrected d-dimensional form).
* :mod:`.markov_quilt` — Song et al. 2017: the Markov Quilt Mechanism (MQMExact, MQMApprox) for
  Markov chains.
* :mod:`.close_adversary` — App. A.4 (adversaries outside Theta); also ``Mechanism.close_adversary``.
* :mod:`.best` — :func:`best`: every applicable mechanism for a framework and target, calibrated,
  and the one with the least noise (variance by default).
* :mod:`.registry` — the registry of mechanism builders: the rows :func:`best` and ``puffer run``
  calibrate for a framework and a target (also :func:`puffer.config.build_mechanisms`).
"""
from ._base import GroupComparison, Mechanism
from .best import Candidate, Selection, best
from .cauchy import CauchyMechanism, cauchy_epsilon
from .kantorovich import Kantorovich, KantorovichGaussian
from .markov_quilt import MarkovQuilt
from .wasserstein import ApproximateWasserstein, DistributionAwareWasserstein, GeneralWasserstein, Wasserstein

__all__ = ["Mechanism", "GroupComparison", "Wasserstein", "GeneralWasserstein",
           "ApproximateWasserstein", "DistributionAwareWasserstein", "Kantorovich", "KantorovichGaussian",
           "CauchyMechanism", "cauchy_epsilon", "MarkovQuilt", "best", "Selection", "Candidate"]
