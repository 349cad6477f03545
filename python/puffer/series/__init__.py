"""Planned series of releases on one chain: many window sums under one certified guarantee.

:func:`plan` calibrates the Laplace noise of every window of a series (window k's query: the
sum of the state values over its positions) so that **all windows together** are
eps-Pufferfish private for the framework's secrets (X_t = s vs X_t = s', every position t of
the horizon, every prior of Theta), whatever order they are published in. It takes the least
noise among the theorems of :mod:`puffer.series.quilt`:

* the quilt decomposition with the exact local loss (puffer's own theorem, proved on the docs
  page "Series plans: what the plan certifies": ``Ref("pufferseries", "Thm 1")``), whose total
  does not grow with the number of windows: a secret pays its quilt's influence once and the
  exact loss of the windows that meet its nearby part;
* the Markov Quilt Mechanism (Song, Wang, Chaudhuri 2017) on the vector of window sums, which
  is 1-Lipschitz in L1 (the fallback, so a plan is never noisier than the MQM).

The plan (:class:`SeriesPlan`) fixes the scales at planning; ``plan.mechanism(k)`` is window
k's calibrated mechanism for the existing release paths, ``plan.release(k, value)`` the
in-memory release. A plan read from a file (:meth:`SeriesPlan.from_json`) is checked for
consistency only; :meth:`SeriesPlan.verify` re-derives its bound on the framework (publishing
does this the first time a plan is used with a ledger). What the plan does not cover: windows chosen adaptively from earlier
outputs, and releases of the same units outside the plan.

>>> import puffer
>>> fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=12)
>>> p = puffer.series.plan(fw, 4, eps=1.0)
>>> p.windows, p.theorem_name, p.guarantee
(((0, 4), (4, 8), (8, 12)), 'quilt', PP(eps=1.0, delta=0.0))
>>> SeriesPlan.from_json(p.to_json()) == p
True
"""
from ._plan import THEOREMS, SeriesPlan, SeriesWindow, plan
from .quilt import series_epsilon

__all__ = ["plan", "SeriesPlan", "SeriesWindow", "THEOREMS", "series_epsilon"]
