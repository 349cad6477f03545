"""Frameworks and mechanisms from a validated description (see :mod:`puffer.config.schema`)."""
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
    """(label, constructor) for every mechanism that applies to ``fw`` and the target.

    Rows needing delta appear only when ``target`` has ``delta``, the RPP rows only with ``alpha``
    (no privacy parameter is ever defaulted). :func:`puffer.mechanisms.best` chooses among these
    rows (and the Markov quilt rows)."""
    from .. import mechanisms as M
    from ..noise import Gaussian, Laplace

    eps = target["eps"]
    delta, alpha = target.get("delta"), target.get("alpha")
    out: list[tuple[str, Callable[[], Mechanism]]] = [("Wasserstein (Laplace)", lambda: M.Wasserstein(fw, eps=eps))]
    if alpha is not None:
        out.append((f"GWM Gaussian, RPP alpha={alpha:g}",
                    lambda: M.GeneralWasserstein(fw, Gaussian, alpha=alpha, eps=eps)))
    if delta is not None:
        out.append((f"GWM Gaussian, PP delta={delta:g}",
                    lambda: M.GeneralWasserstein(fw, Gaussian, eps=eps, delta=delta)))
        out.append((f"GWM Laplace, PP delta={delta:g}",
                    lambda: M.GeneralWasserstein(fw, Laplace, eps=eps, delta=delta)))
    if fw.dim == 1:
        out.append(("Kantorovich Thm 2 (Laplace)", lambda: M.Kantorovich(fw, eps=eps, method="thm2")))
        if delta is not None:
            out.append(("Kantorovich Thm 3 Gaussian (tail)",
                        lambda: M.KantorovichGaussian(fw, eps=eps, delta=delta, variant="tail")))
            out.append((f"GAWM Laplace, delta={delta:g}",
                        lambda: M.ApproximateWasserstein(fw, Laplace, delta, eps=eps)))
        DA = M.DistributionAwareWasserstein
        if alpha is not None:
            out.append((f"DAGWM Gaussian, RPP alpha={alpha:g}",
                        lambda: DA.calibrate(fw, Gaussian(1.0), alpha=alpha, eps=eps)))
        if delta is not None:
            out.append((f"DAGWM Gaussian, PP delta={delta:g}",
                        lambda: DA.calibrate(fw, Gaussian(1.0), delta=delta, eps=eps)))
    return out


def markov_quilt_mechanisms(fw: Framework, target: dict[str, Any]) -> list[tuple[str, Callable[[], Mechanism]]]:
    """(label, constructor) of the Markov Quilt Mechanism rows (Song et al. 2017) that ``puffer
    run`` and ``puffer audit`` list after :func:`build_mechanisms` for a Markov-chain framework:
    MQMExact and MQMApprox, Laplace noise for the sum (and every other Lipschitz) query; none
    for other frameworks (the quilt needs a chain)."""
    from ..mechanisms import MarkovQuilt
    from ..models import MarkovChainFramework

    if not isinstance(fw, MarkovChainFramework):
        return []
    eps = target["eps"]
    rows: list[tuple[str, Callable[[], Mechanism]]] = [
        ("Markov quilt, MQMExact (Laplace)", lambda: MarkovQuilt(fw, eps=eps, method="exact"))]
    if not fw.time_varying:   # MQMApprox bounds the influence by one matrix's spectral gap
        rows.append(("Markov quilt, MQMApprox (Laplace)", lambda: MarkovQuilt(fw, eps=eps, method="approx")))
    return rows
