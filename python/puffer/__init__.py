"""puffer: calibrated noise for Pufferfish privacy and its relatives.

Describe what must stay secret (secret pairs) and what an adversary may believe (a set of
data distributions); puffer finds the least noise a published theorem allows and returns an
immutable guarantee object with its provenance.
"""
from __future__ import annotations

from .errors import (NumericalError, ParameterError, ParameterTypeError, PufferError,
                     UnboundedSensitivityError)
from .dist import DiscreteDist
from .guarantees import PP, RPP, ApproxRPP, Provenance, RPPCurve, default_orders
from . import _core  # noqa: F401  (the compiled core; fails loudly if the build is missing)
from . import transport, noise, sampling, secure
from .sampling import add_noise, sample
from .framework import Framework, Sensitivity
from . import models, mechanisms, audit
from . import iteration, sensitivities

__version__ = "0.1.0"

__all__ = [
    "PufferError", "ParameterError", "ParameterTypeError", "NumericalError",
    "UnboundedSensitivityError", "DiscreteDist", "PP", "RPP", "ApproxRPP", "RPPCurve",
    "Provenance", "default_orders", "transport", "noise", "sampling", "secure", "sample",
    "add_noise", "Framework", "Sensitivity", "models", "mechanisms", "audit",
    "iteration", "sensitivities",
]
