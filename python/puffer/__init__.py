"""puffer: calibrated noise for Pufferfish privacy and its relatives.

Describe what must stay secret (secret pairs) and what an adversary may believe (a set of
data distributions); puffer finds the least noise a published theorem allows and returns an
immutable guarantee object with its provenance.

The facade is lazy (PEP 562): ``import puffer`` loads only the errors and the version; each
name below is imported on first use, so ``import puffer; puffer.add_noise(...)`` does not pay
for scipy (Spark and Dask workers pay the import per process).
"""
from __future__ import annotations

# isort: off
# first, before any other import (typing alone takes tens of ms): Ctrl-C while the `puffer`
# command starts exits 130 with one line, no traceback (puffer._startup)
from . import _startup  # noqa: F401
# isort: on

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import NumericalError, ParameterError, ParameterTypeError, PufferError, UnboundedSensitivityError

# name -> (module, attribute or None for the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "DiscreteDist": (".dist", "DiscreteDist"),
    "PP": (".guarantees", "PP"), "RPP": (".guarantees", "RPP"), "ApproxRPP": (".guarantees", "ApproxRPP"),
    "RPPCurve": (".guarantees", "RPPCurve"), "Provenance": (".guarantees", "Provenance"),
    "default_orders": (".guarantees", "default_orders"), "Guarantee": (".guarantees", "Guarantee"),
    "guarantee_from_dict": (".guarantees", "guarantee_from_dict"),
    "guarantee_from_json": (".guarantees", "guarantee_from_json"),
    "Ref": (".refs", "Ref"),
    "sample": (".sampling", "sample"), "add_noise": (".sampling", "add_noise"),
    "Framework": (".framework", "Framework"), "Sensitivity": (".framework", "Sensitivity"),
    "compose_parallel": (".accounting.pufferfish", "compose_parallel"),
}
_SUBMODULES = ("refs", "guarantees", "transport", "noise", "sampling", "secure", "lattice", "framework",
               "models", "mechanisms", "audit", "dist", "accounting", "partial", "plot", "capacity", "iteration", "sensitivities",
               "config", "series")
_SUBMODULES += ("io", "spark", "dask", "publish")  # type: ignore[assignment]  # issue 16: optional extras, lazy

__all__ = ["__version__", "PufferError", "ParameterError", "ParameterTypeError", "NumericalError",
           "UnboundedSensitivityError", *_LAZY, *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod, __name__), attr)  # type: ignore[arg-type]
    elif name in _SUBMODULES:
        value = importlib.import_module("." + name, __name__)
    else:
        raise AttributeError(f"module 'puffer' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs; not executed
    from . import (  # noqa: F401
        audit,
        config,
        dist,
        framework,
        guarantees,
        lattice,
        mechanisms,
        models,
        noise,
        refs,
        sampling,
        secure,
        transport,
    )
    from .dist import DiscreteDist  # noqa: F401
    from .framework import Framework, Sensitivity  # noqa: F401
    from .guarantees import (  # noqa: F401
        PP,
        RPP,
        ApproxRPP,
        Guarantee,
        Provenance,
        RPPCurve,
        default_orders,
        guarantee_from_dict,
        guarantee_from_json,
    )
    from .refs import Ref  # noqa: F401
    from .sampling import add_noise, sample  # noqa: F401
