"""Guarantee objects: one vocabulary, one loader.

* :mod:`.pufferfish` — PP, RPP, RPPCurve, ApproxRPP (Pierquin et al. 2024) and their conversions.
* :mod:`.dp` — PureDP, ApproxDP, ZCDP, GDP for a granularity (Guerra-Balboa et al. 2024).
* :mod:`.provenance` — where a guarantee came from, with :class:`~puffer.refs.Ref` citations.
* :mod:`._base` — the :class:`Guarantee` base, :func:`register_guarantee`, and the loader
  :func:`guarantee_from_dict` / :func:`guarantee_from_json` that dispatches on ``"type"``.

Other guarantee kinds (DP-type for the accountant, ε-TP, capacity bounded) live in sibling
modules of this package and register themselves the same way.
"""
from ._base import (
                    Guarantee,
                    decode_number,
                    encode_number,
                    guarantee_from_dict,
                    guarantee_from_json,
                    guarantee_types,
                    register_guarantee,
                    round_up,
)
from .capacity import CapacityBounded
from .dp import GDP, NO_GUARANTEE, RDP, ZCDP, ApproxDP, NoGuarantee, PureDP
from .provenance import Provenance
from .pufferfish import PP, RPP, ApproxRPP, RPPCurve, default_orders
from .tp import TP

__all__ = ["Guarantee", "register_guarantee", "guarantee_from_dict", "guarantee_from_json",
           "guarantee_types", "round_up", "encode_number", "decode_number", "Provenance",
           "PP", "RPP", "ApproxRPP", "RPPCurve", "default_orders",
           "PureDP", "ApproxDP", "ZCDP", "GDP", "RDP", "NoGuarantee", "NO_GUARANTEE", "TP", "CapacityBounded"]
