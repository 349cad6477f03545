"""The ``puffer`` command line.

``puffer demo`` runs the built-in correlated-data example end to end: a Markov chain of
household activity (away/home every half hour over a day) under a grid of adversary priors.
``puffer run FILE`` does the same for a framework described in a JSON or TOML file::

    [model]                 # one of: markov_chain, independent_users, correlated_pair,
    kind = "markov_chain"   #         joint_counts, conditionals
    trans = [[[0.9, 0.1], [0.2, 0.8]], [[0.8, 0.2], [0.3, 0.7]]]
    T = 24
    [target]
    eps = 1.0               # each mechanism is calibrated to eps (and delta where it needs one)
    delta = 1e-5
    [release]
    values = [10.0, 12.0, 7.0]   # optional: true query answers to release with noise
    seed = 1
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, Callable

import numpy as np

DEMO = {
    "name": "household activity: 2-state Markov chain (away/home), T = 48 half-hours, 8 x 8 prior grid",
    "model": {"kind": "markov_chain", "T": 48,
              "grid": {"stay_away": [0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95],
                       "stay_home": [0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95]}},
    "target": {"eps": 1.0, "delta": 1e-5, "alpha": 2.0},
    "release": {"values": [31.0, 18.0, 40.0, 27.0, 35.0], "seed": 2026},
}


def _progress(msg: str, out) -> None:
    print(f"  .. {msg}", file=out, flush=True)


def build_framework(model: dict):
    """A Framework from a model description (see the module docstring)."""
    from . import models
    from .dist import DiscreteDist
    from .errors import ParameterError
    from .framework import Framework

    kind = model.get("kind")
    if kind == "markov_chain":
        if "grid" in model:
            g = model["grid"]
            trans = [[[a, 1 - a], [1 - h, h]] for a in g["stay_away"] for h in g["stay_home"]]
            labels = [f"stay_away={a:.2f},stay_home={h:.2f}" for a in g["stay_away"] for h in g["stay_home"]]
        else:
            trans, labels = model["trans"], model.get("labels")
        return models.markov_chain(trans, model["T"], init=model.get("init", "stationary"),
                                   values=model.get("values"), labels=labels)
    if kind == "independent_users":
        return models.independent_users(model["p"], users=model.get("users"))
    if kind == "correlated_pair":
        return models.correlated_pair(model.get("p", 0.5), model.get("rho", 0.3))
    if kind == "joint_counts":
        return Framework.from_joint_counts(model["counts"], model["secrets"], model["x_values"],
                                           model.get("pairs", "all"))
    if kind == "conditionals":
        conds = {th: {s: (None if law is None else DiscreteDist(law["atoms"], law["probs"]))
                      for s, law in per.items()} for th, per in model["conditionals"].items()}
        pairs = [tuple(p) for p in model["pairs"]] if isinstance(model["pairs"], list) else model["pairs"]
        return Framework.from_conditionals(conds, pairs)
    raise ParameterError("model.kind", kind,
                         "'markov_chain', 'independent_users', 'correlated_pair', 'joint_counts' or 'conditionals'")


def _mechanisms(fw, target: dict) -> list[tuple[str, Callable[[], Any]]]:
    from . import mechanisms as M
    from .noise import Gaussian, Laplace

    eps, delta, alpha = target.get("eps", 1.0), target.get("delta", 1e-5), target.get("alpha", 2.0)
    out = [
        ("Wasserstein (Laplace)", lambda: M.Wasserstein(fw, eps)),
        (f"GWM Gaussian, RPP alpha={alpha}", lambda: M.GeneralWasserstein(fw, Gaussian(1.0), alpha=alpha, eps=eps)),
        (f"GWM Gaussian, PP delta={delta:g}", lambda: M.GeneralWasserstein(fw, Gaussian(1.0), eps=eps, delta=delta)),
    ]
    if fw.dim == 1:
        out += [
            ("Kantorovich Thm 2 (Laplace)", lambda: M.Kantorovich(fw, eps, method="thm2")),
            (f"Kantorovich Thm 3 Gaussian (tail)", lambda: M.KantorovichGaussian(fw, eps, delta, variant="tail")),
            (f"GAWM Laplace, delta={1e-3:g}", lambda: M.ApproximateWasserstein(fw, Laplace(1.0), 1e-3, eps=eps)),
        ]
    return out


def _guarantee_text(m) -> str:
    from .guarantees import PP, RPPCurve, ApproxRPP

    g = m.guarantee
    if isinstance(g, PP):
        return f"({g.eps:.4g}, {g.delta:g})-PP" if g.delta else f"{g.eps:.4g}-PP"
    if isinstance(g, ApproxRPP):
        a = "inf" if math.isinf(g.alpha) else f"{g.alpha:g}"
        return f"({a}, {g.eps:.4g}, {g.delta:g})-approx RPP"
    if isinstance(g, RPPCurve):
        t = m.target
        if t.get("alpha") is not None:
            return f"({t['alpha']:g}, {m.epsilon(t['alpha']):.4g})-RPP (all orders)"
        pp = g.to_pp(t["delta"])
        return f"({pp.eps:.4g}, {pp.delta:g})-PP via RPP curve"
    return repr(g)


def run(config: dict, out=None) -> int:
    out = sys.stdout if out is None else out
    print(f"puffer: {config.get('name', 'framework from file')}", file=out)
    t0 = time.perf_counter()
    _progress("building the framework and its conditional laws", out)
    fw = build_framework(config["model"])
    print(f"  {fw!r}", file=out)
    rows, mechs = [], []
    todo = _mechanisms(fw, config.get("target", {}))
    for k, (label, make) in enumerate(todo, 1):
        _progress(f"[{k}/{len(todo)}] calibrating {label}", out)
        t1 = time.perf_counter()
        m = make()
        mechs.append((label, m))
        scale = "none" if m.noise is None else f"{type(m.noise).__name__}({m.noise.scale:.4g})"
        grp = m.group
        rows.append([label, f"{m.sensitivity.value:g}", scale, _guarantee_text(m),
                     "-" if grp is None else f"{grp.scale:.4g}",
                     "-" if grp is None else f"{grp.gain:.2f}x", f"{time.perf_counter() - t1:.2f}s"])
    head = ["mechanism", "sensitivity", "noise", "guarantee", "group-DP scale", "gain", "time"]
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
    print("\n" + line + "\n" + "-" * len(line), file=out)
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)), file=out)
    w = mechs[0][1].sensitivity.witness
    print(f"\nworst case (Wasserstein): prior {w[0]!r}, secret pair {w[1]}", file=out)
    if fw.group_sensitivity is not None:
        print(f"group DP baseline: sensitivity {fw.group_sensitivity:g} ({fw.group_note})", file=out)
    rel = config.get("release")
    if rel and rel.get("values"):
        vals = np.asarray(rel["values"], dtype=np.float64)
        label, m = mechs[0]
        noisy = m.release(vals, rng=rel.get("seed"))
        print(f"\nrelease with {label}, seed {rel.get('seed')}:", file=out)
        print("  true  " + " ".join(f"{v:8.2f}" for v in vals), file=out)
        print("  noisy " + " ".join(f"{v:8.2f}" for v in noisy), file=out)
    print(f"\ndone in {time.perf_counter() - t0:.1f} s", file=out)
    return 0


def _load(path: str) -> dict:
    from .errors import ParameterError

    with open(path, "rb") as fh:
        data = fh.read()
    if path.endswith(".toml"):
        import tomllib
        return tomllib.loads(data.decode())
    if path.endswith(".json"):
        return json.loads(data)
    raise ParameterError("file", path, "a .json or .toml framework description")


def main(argv: list[str] | None = None) -> int:
    from .errors import PufferError

    parser = argparse.ArgumentParser(prog="puffer", description="Calibrated noise for Pufferfish privacy.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="run the built-in correlated-data example")
    r = sub.add_parser("run", help="calibrate the mechanisms for a framework described in a JSON/TOML file")
    r.add_argument("file")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "demo":
            return run(DEMO)
        return run(_load(args.file))
    except PufferError as exc:
        print(f"puffer: error: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(f"puffer: error: the description lacks the field {exc}", file=sys.stderr)
        return 2
