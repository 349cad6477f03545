"""Empirical auditor (issue 17): tightness of every mechanism on the `puffer demo` framework and
the auditor's throughput."""
import time

TITLE = "Empirical auditor: tightness on the demo framework (issue 17)"


def run(ctx):
    from puffer import audit, mechanisms
    from puffer.cli import DEMO
    from puffer.config import build_framework, build_mechanisms
    from puffer.dist import DiscreteDist
    from puffer.framework import Framework

    n = 20_000 if ctx.quick else 400_000
    fw = build_framework(DEMO["model"])
    rows = []
    for label, make in build_mechanisms(fw, DEMO["target"]):
        m = make()
        r = audit.empirical(m, n=n, rng=2026, confidence=0.99)
        th, (si, sj) = r.witness.theta, r.witness.pair
        P, Q = fw.conditional(th, si), fw.conditional(th, sj)
        exact = "-"
        if r.kind == "pp" and r.delta == 0 and type(m.noise).__name__ == "Laplace":
            exact = f"{audit.laplace_privacy_loss(P, Q, m.noise.scale):.4f}"
        elif r.kind == "rpp":
            exact = f"{audit.renyi_divergence(P, Q, m.noise, r.alpha):.4f}"
        rows.append([label, r.describe_claim(), f"{r.lower:.4f}", f"{r.estimate:.4f}", exact, f"{r.ratio:.3f}",
                     "yes" if r.violated else "no", f"{r.samples_per_second:.3g}"])
    tight = [["claim", "setting", "n", "lower", "ratio", "outputs/s (audit incl. release)"]]
    point = Framework.from_conditionals({"t": {"a": DiscreteDist([0.0], [1.0]), "b": DiscreteDist([1.0], [1.0])}},
                                        [("a", "b")])
    for lab, m in (("1-PP", mechanisms.Wasserstein(point, eps=1.0)),
                   ("(2, 1)-RPP", mechanisms.GeneralWasserstein(point, "gaussian", alpha=2.0, eps=1.0))):
        nn = n * 5 // 2
        t0 = time.perf_counter()
        r = audit.empirical(m, n=nn, rng=1)
        dt = time.perf_counter() - t0
        tight.append([lab, "point masses at distance 1 (tight: true loss = claim)", f"{nn}", f"{r.lower:.4f}",
                      f"{r.ratio:.3f}", f"{2 * nn / dt:.3g}"])
    return [
        {"title": f"Demo framework ({fw!r}), worst pair, n = {n} outputs per secret, confidence 0.99",
         "columns": ["mechanism", "claimed", "empirical lower bound", "plug-in estimate",
                     "exact (oracle, same pair)", "ratio lower/claimed",
                     "violated", "auditor outputs/s"],
         "rows": rows,
         "notes": "PP claims: DP-Sniper likelihood-ratio events, Clopper-Pearson on a held-out half; RPP claims: "
                  "partition of the likelihood ratio, dual-minimised Clopper-Pearson box. Exact: puffer.audit's "
                  "oracles (Laplace: exact sup loss; Gaussian: numeric D_alpha) on the witness pair and direction. "
                  "A ratio well below 1 is slack in the theorem (or the worst event is too rare to see at this n), "
                  "never a violation."},
        {"title": "Auditor on tight mechanisms (how close the lower bound gets)", "columns": tight[0],
         "rows": tight[1:]},
    ]
