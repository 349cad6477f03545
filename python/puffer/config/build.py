"""Frameworks and mechanisms from a validated description (see :mod:`puffer.config.schema`).

The rows of mechanisms for a framework and a target are :mod:`puffer.mechanisms.registry`'s (the
registry of mechanism builders belongs to the mechanisms; the configuration only parses files):
:func:`build_mechanisms` and :func:`markov_quilt_mechanisms` here are the same functions."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..framework import Framework
    from ..mechanisms._base import Mechanism

__all__ = ["build_framework", "build_mechanisms", "markov_quilt_mechanisms"]


def build_framework(model: dict[str, Any]) -> Framework:
    """A :class:`~puffer.Framework` from the ``[model]`` table of a validated description."""
    from .. import models
    from ..dist import DiscreteDist
    from ..framework import Framework

    kind = model["kind"]
    if kind == "markov_chain":
        labels: Any
        if "grid" in model:
            g = model["grid"]
            trans = [[[a, 1 - a], [1 - h, h]] for a in g["stay_away"] for h in g["stay_home"]]
            labels = [f"stay_away={a:.2f},stay_home={h:.2f}" for a in g["stay_away"] for h in g["stay_home"]]
        else:
            trans, labels = model["trans"], model.get("labels")
        return models.markov_chain(trans, model["T"], init=model.get("init", "stationary"),
                                   values=model.get("values"), labels=labels, normalize=model.get("normalize"),
                                   period=model.get("period"))
    if kind == "fit_markov":
        keys = ("period", "groups", "level", "method", "states", "values", "prior", "n_boot", "seed", "min_count",
                "init", "phase_offset", "private", "clip")
        return models.fit_markov(model["data"], T=model["T"], columns=model.get("columns", ("unit", "order", "state")),
                                 **{k: model[k] for k in keys if k in model})
    if kind == "independent_users":
        return models.independent_users(model["p"], users=model.get("users"))
    if kind == "correlated_pair":
        return models.correlated_pair(model.get("p", 0.5), model.get("rho", 0.3))
    if kind == "joint_counts":
        return Framework.from_joint_counts(model["counts"], model["secrets"], model["x_values"],
                                           model.get("pairs", "all"))
    # conditionals
    conds = {th: {s: (None if law is None else DiscreteDist(law["atoms"], law["probs"]))
                  for s, law in per.items()} for th, per in model["conditionals"].items()}
    pairs = [tuple(p) for p in model["pairs"]] if isinstance(model["pairs"], list) else model["pairs"]
    return Framework.from_conditionals(conds, pairs)


def build_mechanisms(fw: Framework, target: dict[str, Any]) -> list[tuple[str, Callable[[], Mechanism]]]:
    """(label, constructor) for every mechanism that applies to ``fw`` and the target:
    :func:`puffer.mechanisms.registry.build_mechanisms`."""
    from ..mechanisms.registry import build_mechanisms as rows
    return rows(fw, target)


def markov_quilt_mechanisms(fw: Framework, target: dict[str, Any]) -> list[tuple[str, Callable[[], Mechanism]]]:
    """The Markov Quilt Mechanism rows for a Markov-chain framework (none for others):
    :func:`puffer.mechanisms.registry.markov_quilt_mechanisms`."""
    from ..mechanisms.registry import markov_quilt_mechanisms as rows
    return rows(fw, target)
