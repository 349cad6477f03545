"""Privacy amplification by iteration, and private training on correlated records.

Privacy amplification by iteration and private training on correlated data (Pierquin,
Bellet, Tommasi, Boussard 2024, §5, §6.4, App. E.3, F.5).

* :mod:`.allocation` -- shift allocations: the optimal taut string (C++), the paper's choices.
* :mod:`.pabi` -- the Thm 5.2 accountant (:class:`PABI`, :func:`pabi`, :func:`pabi_curve`).
* :mod:`.sgd` -- noisy projected SGD: shifts (Prop 6.4), Lemma F.1, the :class:`NoisySGD` trainer.
* :mod:`.figures` -- Figures 5 and 6 as numbers; :mod:`.plot` draws them (matplotlib, optional).

Every guarantee records the paper's soundness caveat (:data:`SOUNDNESS_CAVEAT`) in its provenance.
"""
from . import figures
from .allocation import optimal_allocation, paper_allocation, single_step_allocation, uniform_allocation
from .pabi import PABI, SOUNDNESS_CAVEAT, PABIBound, pabi, pabi_curve
from .sgd import (
                         LogisticLoss,
                         NoisySGD,
                         SGDAccount,
                         SGDResult,
                         SquaredLoss,
                         feldman_thm23,
                         gaussian_prior_shifts,
                         lemma_f1,
                         noisy_sgd_account,
                         sgd_shifts,
)

__all__ = ["optimal_allocation", "paper_allocation", "uniform_allocation", "single_step_allocation",
           "PABI", "PABIBound", "SOUNDNESS_CAVEAT", "pabi", "pabi_curve", "LogisticLoss", "SquaredLoss",
           "NoisySGD", "SGDResult", "SGDAccount", "noisy_sgd_account", "sgd_shifts", "gaussian_prior_shifts",
           "lemma_f1", "feldman_thm23", "figures"]
