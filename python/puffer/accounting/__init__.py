"""Composition of DP-type releases for any granularity notion: sequential, parallel and in between.

Composition accounting for general granularity notions (Guerra-Balboa, Miranda-Pascual,
Parra-Arnau, Strufe, "Composition in Differential Privacy for General Granularity Notions",
IEEE CSF 2024), and how Pufferfish guarantees may (not) compose (Pierquin et al. 2024, App. E.1).

Modules, one per concept:

* :mod:`.databases` — database classes (D_X, fixed size, ordered tables, finite, images).
* :mod:`.granularity` — Unbounded, Bounded, FreeLunch, OrderedBounded, Graph; d^G, connectedness,
  conversion factors.
* :mod:`.selectors` — Identity, RecordFilter, Partition, OrderPartition, Opaque.
* DP-type guarantees PureDP, ApproxDP, ZCDP, GDP live in :mod:`puffer.guarantees.dp` (one
  vocabulary, one loader) and are re-exported here.
* :mod:`.accountant` — Accountant (add / total / result / loss_between / explain).
* :mod:`.footprint`, :mod:`.enumeration` — the two exact strategies; :mod:`.explain`.
* :mod:`.pufferfish` — refusal of PP/RPP without a certificate, ``compose_parallel`` (Prop E.1).
* :mod:`.cli` — ``puffer account FILE``.

>>> from puffer import accounting as A
>>> acc = A.Accountant(A.Unbounded(), notion="zcdp")
>>> _ = acc.add(A.ZCDP(0.5), selector=A.RecordFilter(["a"]))
>>> _ = acc.add(A.ZCDP(0.2), selector=A.RecordFilter(["b"]))
>>> round(acc.total().rho, 12)      # parallel composition: max rho_i (rounded up)
0.5
"""
from ..guarantees.dp import GDP, NO_GUARANTEE, RDP, ZCDP, ApproxDP, NoGuarantee, PureDP, group_factor
from .accountant import NOTIONS, Accountant, Composition, DisconnectedClassWarning
from .databases import AllMultisets, Finite, FixedSize, Image, Ordered, multiset
from .granularity import Bounded, FreeLunch, Granularity, Graph, OrderedBounded, Unbounded
from .metric import MetricForm
from .pufferfish import Certified, NotComposableError, compose_parallel
from .selectors import Identity, Opaque, OrderPartition, Partition, RecordFilter, Selector

__all__ = ["PureDP", "ApproxDP", "ZCDP", "GDP", "RDP", "NoGuarantee", "NO_GUARANTEE", "group_factor",
           "Accountant", "Composition", "DisconnectedClassWarning", "NOTIONS",
           "AllMultisets", "FixedSize", "Ordered", "Finite", "Image", "multiset",
           "Granularity", "Unbounded", "Bounded", "FreeLunch", "OrderedBounded", "Graph",
           "MetricForm", "Certified", "NotComposableError", "compose_parallel",
           "Selector", "Identity", "RecordFilter", "Partition", "OrderPartition", "Opaque"]
