"""Privacy audits: exact oracles and an empirical auditor.

* :mod:`.exact` — exact / numeric privacy-loss oracles for discrete 1-D frameworks
  (:func:`laplace_privacy_loss`, :func:`renyi_divergence`, :func:`max_privacy_loss`,
  :func:`loss_tail_probability`, :func:`framework_loss`).
* :mod:`.empirical` — :func:`empirical`: a lower confidence bound on the privacy loss of any
  mechanism *as released*, from samples, with a verdict that can fail (``report.violated``).
* :mod:`.report` — :class:`AuditReport`, :class:`PairAudit`.
* :mod:`.statistic` — the witness statistics (declared-model likelihood ratio, histogram).
* :mod:`.cli` — the ``puffer audit FILE`` subcommand.
"""
from .empirical import audit_many, claim_of, empirical
from .exact import framework_loss, laplace_privacy_loss, loss_tail_probability, max_privacy_loss, renyi_divergence
from .report import AuditReport, PairAudit

__all__ = ["laplace_privacy_loss", "renyi_divergence", "max_privacy_loss", "loss_tail_probability",
           "framework_loss", "empirical", "audit_many", "claim_of", "AuditReport", "PairAudit"]
