"""Guerra-Balboa et al. 2024, "Composition in Differential Privacy for General Granularity Notions":
the worked examples, the paper's statements next to puffer's accountant.

Each row names where the paper makes its statement (Sec. III-A, Ex. II.9, IV.5, IV.9/IV.14, VI.8,
VI.25, Sec. VI-A, Thm VI.5, Cor. A.18). The examples are stated for any number of hospitals or
districts and any privacy parameters; where puffer needs numbers the command chooses them (eight
hospitals with the links printed below, eps = (.3, .5, .2, .4), mu = (1, .5, .25)) and prints
the paper's formula at those numbers as *derived*, not as the paper's value. puffer's column is
the certified upper bound its accountant reports (float summation error rounded up, so it may
exceed the exact value in the last digits). The examples have no data: nothing is a stand-in.
Run: python examples/papers/guerra_balboa2024.py [--quick]
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import LEGEND, Stated, compared, note, parse  # noqa: E402

from puffer import accounting as A  # noqa: E402

AMB = {"a1": {"h1", "h2", "h3"}, "a2": {"h4", "h5", "h6"}, "a3": {"h1", "h7"}, "a4": {"h2"},
       "a5": {"h3", "h5", "h8"}}
HOSP = [f"h{i}" for i in range(1, 9)]


def _ambulances(G: A.Granularity, g: object, notion: str) -> A.Accountant:
    acc = A.Accountant(G, notion=notion)
    for h in HOSP:
        acc.add(g, selector=A.RecordFilter([a for a, hs in AMB.items() if h in hs]), label=f"count@{h}")
    return acc


def _cells(G: A.Granularity, notion: str, params: list, scope: str = "common") -> A.Accountant:
    names = [f"x{i}" for i in range(len(params))]
    p = A.Partition(lambda x: x, cells=names)
    acc = A.Accountant(G, notion=notion)
    cls = {"pure": A.PureDP, "approx": A.ApproxDP, "gdp": A.GDP}[notion]
    for c, prm in zip(names, params):
        acc.add(cls(*(prm if isinstance(prm, tuple) else (prm,))), selector=p[c], scope=scope)
    return acc


def main(argv: list[str] | None = None) -> int:
    parse(__doc__, argv)
    g = A.ApproxDP(1.0, 1e-5)
    amb_u = _ambulances(A.Unbounded(), A.PureDP(1.0), "pure").total()
    amb_acc = _ambulances(A.Bounded(), g, "approx")
    amb_b = amb_acc.total()
    seq = amb_acc.result().sequential
    r6 = _cells(A.Bounded(), "pure", [0.3, 0.5, 0.2, 0.4]).total()
    r2 = _cells(A.Bounded(), "pure", [0.0, 0.0], scope="local").total()
    r9 = _cells(A.Unbounded(), "gdp", [1.0, 1.0, 1.0], scope="local").loss_between(["x2"], ["x0", "x1", "x2"])
    r10 = _cells(A.Bounded(), "gdp", [1.0, 0.5, 0.25]).total()
    first_blowup = next(n for n in range(1, 100) if g.group_delta(n) > 1)

    def group_delta(n: int) -> float:   # delta [n]_eps = delta (e^(n eps) - 1) / (e^eps - 1), eps = 1
        return 1e-5 * math.expm1(n) / math.expm1(1.0)

    k = len(HOSP)
    rows = [
        ("Sec. III-A", "unbounded eps-DP => bounded c eps-DP: c = dist(U, B)", 2, A.Unbounded().dist_to(A.Bounded()),
         None),
        ("Sec. III-A", "bounded => unbounded: c = dist(B, U)", math.inf, A.Bounded().dist_to(A.Unbounded()), None),
        ("Ex. II.9", "counts on a record partition, bounded DP, local domains, every eps_i = 0",
         Stated("not bounded eps-DP for any eps", lambda v: v == "no guarantee"),
         "no guarantee" if r2 is A.NO_GUARANTEE else r2, None),
        ("Ex. IV.5", f"ambulance counts of k = {k} hospitals (paper: any k > 3), each d^U-private: eps",
         Stated("<= 3 (d <= 3 d^U < k d^U)", lambda v: v <= 3 * (1 + 1e-12)), amb_u.eps, 3),
        ("Ex. VI.8", "the same counts, each bounded (1, 1e-5)-DP: eps", 6, amb_b.eps, None),
        ("Ex. VI.8", "the same: delta", 6e-5, amb_b.delta, None),
        ("Thm VI.5", f"sequential composition of the k = {k} releases instead",
         Stated("(sum eps_i, sum delta_i) = (k, k 1e-5)"), f"({seq[0]:g}, {seq[1]:g})", f"({k:g}, {k * 1e-5:g})"),
        ("Ex. IV.9/IV.14", "bounded Laplace counts per district, eps_i = (.3, .5, .2, .4), common domain: eps",
         Stated("max over i != j of eps_i + eps_j"), r6.eps, 0.5 + 0.4),
        ("Sec. VI-A", "delta = 1e-5, eps = 1: smallest n with delta [n]_eps > 1",
         Stated("> 1 for every n >= 13", lambda v: v <= 13), first_blowup, 13),
        ("Sec. VI-A", "n = 13: delta [n]_eps", Stated("> 1", lambda v: v > 1), g.group_delta(13), group_delta(13)),
        ("Sec. VI-A", "n = 12: delta [n]_eps", None, g.group_delta(12), group_delta(12)),
        ("Sec. VI-A", "group of n = 2: delta [2]_eps = delta (1 + e)",
         Stated("delta [n]_eps = delta (e^(n eps) - 1) / (e^eps - 1)"), g.group(2).delta, group_delta(2)),
        ("Ex. VI.25", "GDP releases on a record partition, D' = D + {x_i, x_j}: d~(D, D')", math.sqrt(2), r9, None),
        ("Cor. A.18", "bounded GDP on a record partition, mu = (1, .5, .25): mu",
         Stated("max over i != j of sqrt(mu_i^2 + mu_j^2)"), r10.mu, math.sqrt(1.0 + 0.25)),
    ]
    compared("Worked examples", rows)
    note(f"{LEGEND}.",
         f"Ex. IV.5 / VI.8 here: k = {k} hospitals (the paper: any k > 3) and five ambulances, each linked to at "
         "most three hospitals as the paper requires: " + "; ".join(f"{a} -> {', '.join(sorted(hs))}"
                                                                    for a, hs in AMB.items()) + ".")
    return 0


if __name__ == "__main__":
    from puffer.cli import quiet_on_broken_pipe  # `... | head` ends quietly, as the puffer command does

    raise SystemExit(quiet_on_broken_pipe(main))
