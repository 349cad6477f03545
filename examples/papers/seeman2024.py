"""Seeman, Reimherr & Slavković 2024, "Formal Privacy for Partially Private Data": the §4 case
study (Figures 1-3) and Figure 4.

The paper's data (Pennsylvania monthly COVID-19 cases and deaths per county, 67 counties x 24
months) are not shipped and nothing is downloaded: the case study runs on a SYNTHETIC county x
month table with the paper's dimensions and the three named counties' populations (Allegheny
1.2 m, Erie 260 k, Cameron 4 k). The paper prints no numbers for Figures 1-3, only patterns; the
tables quote each stated pattern next to what the synthetic rerun gives. Delta_Z = 2 is assumed,
as in the paper (its guarantees carry the flag "Delta_z assumed"). The WEM samplers are MCMC
(approximate), as in the paper; the full run uses 10 replicates (the paper: 100). For the naive
WEM an exact sampler exists (the l2 K-norm law), and the command runs it too: it separates what
the mechanism does from what the sampler does.
Figure 4 (Delta_z of correlated counts) is exact; the paper gives no grid, the derived values are
reconstructions at the printed parameters.
Run: python examples/papers/seeman2024.py [--quick] [--plot [DIR]]
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import LEGEND, Stated, compared, figure_dir, note, parse, table, wrote  # noqa: E402

import puffer.partial as P  # noqa: E402
from puffer.partial import casestudy as cs  # noqa: E402


def _exact_knorm(data: cs.CaseData, eps: float, reps: int, seed: int) -> tuple[np.ndarray, float]:
    """The naive WEM (WEM-a) drawn exactly: density exp(-eps ||y - x||_2 / (2 Delta_Z)) over the 2J
    counts of a month, the l2 K-norm law (continuous; the case study's MCMC samples its lattice
    version). Returns the case counts (reps, T, J) and the scale 2 Delta_Z / eps."""
    X, D = data.cases[1:], data.deaths[1:]
    T, J = X.shape
    fw = P.TPFramework.assumed(cs.DELTA_Z, z="synthetic", family="unspecified (Delta_Z assumed)",
                               pairs="one person: one county's case and death counts")
    wem = P.WassersteinExponential(eps, fw, loss="l2", space="R^d", dim=2 * J)
    rng = np.random.default_rng(seed)
    out = np.empty((reps, T, J))
    for t in range(T):
        draws = wem.release(np.concatenate([X[t], D[t]]).astype(float), size=reps, rng=rng)
        out[:, t] = draws[:, :J]
    return out, float(wem.scale)


def main(argv: list[str] | None = None) -> int:
    args = parse(__doc__, argv, figures="seeman2024-figures")
    J, T, reps, steps = (12, 3, 2, 50) if args.quick else (67, 24, 10, 400)
    data = cs.synthetic_data(J=J, T=T, seed=2026)
    study = cs.run_case_study(data, (0.01, 1.0), reps, steps_per_dim=steps, rng=np.random.SeedSequence(2026),
                              quiet=True)
    s = cs.summaries(study)
    print(f"synthetic data: J = {data.J} counties x T = {data.T} months, {reps} replicates per (method, eps)"
          + (" [--quick]" if args.quick else ""))

    X = data.cases[1:]
    pos = X > 0
    knorm, scale = _exact_knorm(data, 1.0, reps, 2026)
    knorm_err = (100.0 * np.abs(knorm - X[None]) / np.where(pos, X, 1)[None])[:, pos].ravel()
    med = {k: float(np.median(v)) for k, v in s["fig2"].items()}
    worst = {k: float(np.quantile(v, 0.95)) for k, v in s["fig2"].items()}
    rows = [("Fig. 2", m, e, med[(m, e)], worst[(m, e)]) for (m, e) in sorted(med, key=lambda k: (k[1], k[0]))]
    rows.append(("Fig. 2", "WEM-a, exact sampler", 1.0, float(np.median(knorm_err)), float(np.quantile(knorm_err, 0.95))))
    table("Figure 2: relative error of case counts, % (all counties and months; puffer on the synthetic data; "
          "the paper prints no numbers)", ["where", "method", "eps", "puffer median", "puffer 95th percentile"], rows)

    def spread(m: str, e: float, county: str) -> float:
        truth = s["fig1_truth"][county]
        return float(np.median(np.abs(s["fig1"][(m, e)][county] - truth) / np.maximum(truth, 1e-12)))

    wem = [m for m in study["methods"] if m != "PP"]
    comparable = max(med[(m, 1.0)] for m in study["methods"]) <= 3 * min(med[(m, 1.0)] for m in study["methods"])
    rows = [
        ("Fig. 1", "eps = 1, Allegheny: median relative error of the case rate, %",
         Stated("all methods concentrate around the truth", pattern=True,
                holds=lambda v: max(float(x.split()[-1]) for x in v.split(", ")) < 25),
         ", ".join(f"{m} {100 * spread(m, 1.0, 'Allegheny'):.2g}" for m in study["methods"]), None),
        ("Fig. 1", "eps = 0.01, Cameron (4 k): median relative error of PP's case rate, %",
         Stated("post-processing noise entirely degrades the signal", pattern=True, holds=lambda v: v > 50),
         100 * spread("PP", 0.01, "Cameron"), None),
        ("Fig. 2", "eps = 1: median errors of the four methods, %",
         Stated("comparable", pattern=True, holds=lambda v: comparable),
         ", ".join(f"{m} {med[(m, 1.0)]:.3g}" for m in study["methods"]), None),
        ("Fig. 2", "eps = 0.01: worst (95th percentile) errors, %",
         Stated("smaller under WEM than PP", pattern=True,
                holds=lambda v: all(worst[(m, 0.01)] < worst[("PP", 0.01)] for m in wem)),
         ", ".join(f"{m} {worst[(m, 0.01)]:.3g}" for m in study["methods"]), None),
    ]
    for (e, which), eff in sorted(s["fig3"].items()):
        rows.append(("Fig. 3", f"PP contraction effects, eps = {e:g}, {which} county ({s['fig3_counties'][which]})",
                     Stated("most frequent at small eps in the least populous county"),
                     ", ".join(f"{k} {v:.2f}" for k, v in eff.items()), None))
    compared("Figures 1-3: the patterns the paper states, and the synthetic rerun", rows)

    # eps = 1: what the naive WEM's l2 K-norm noise is, per count, against PP's discrete Laplace
    d = 2 * data.J
    a = math.exp(-1.0 / cs.DELTA_Z)
    pp_noise = np.concatenate([(study["results"][("PP", 1.0)]["noisy_cases"] - X[None]).ravel(),
                               (study["results"][("PP", 1.0)]["noisy_deaths"] - data.deaths[1:][None]).ravel()])
    rows = [
        ("Sec. 4", f"eps = 1, WEM-a: noise std per count (l2 K-norm over 2J = {d} counts, scale {scale:g}; exact "
                   "sampler)", None, float(np.std(knorm - X[None])), scale * math.sqrt((d + 1) * (d + 2) / d),
         {"rtol": 0.25 if args.quick else 0.05}),
        ("Sec. 4", "eps = 1, PP: noise std per count (discrete Laplace of rate eps / Delta_Z)", None,
         float(np.std(pp_noise)), math.sqrt(2 * a) / (1 - a), {"rtol": 0.25 if args.quick else 0.05}),
        ("Fig. 2", "eps = 1, WEM-a: median error, exact K-norm sampler / the case study's MCMC, %", None,
         f"{np.median(knorm_err):.3g} / {med[('WEM-a', 1.0)]:.3g}", None),
    ]
    compared("eps = 1: the naive WEM's noise against PP's (derived: the laws' standard deviations in closed form)",
             rows)

    rows = []
    for n, z0, z1, ref in ((100, 0.3, 0.7, 41), (10, 0.1, 0.8, 8), (20, 0.0, 0.5, 20), (20, 0.4, 0.4, 1)):
        rows.append(("Fig. 4", f"n = {n}, z0 = {z0}, z1 = {z1}: Delta_z", None,
                     P.TPFramework.correlated_counts(n, z0, z1).delta_z, float(ref)))
    rows.append(("Fig. 4", "n = 20, z0 = 0, z1 = 0.99 (strong dependence): Delta_z",
                 Stated("approaches n as z0 -> 0 and z1 -> 1", lambda v: v >= 19),
                 P.TPFramework.correlated_counts(20, 0.0, 0.99).delta_z, None))
    compared("Figure 4: Delta_z of correlated counts (exact)", rows)

    note(f"{LEGEND}.")
    if not comparable:
        note(f"Where this rerun differs from the paper: at eps = 1 PP (median {med[('PP', 1.0)]:.3g} %) is far more "
             f"accurate than the WEM variants ({', '.join(f'{m} {med[(m, 1.0)]:.3g} %' for m in wem)}); the paper "
             "calls them comparable. The sampler is not the cause: the naive WEM drawn exactly (the l2 K-norm law) "
             f"has the same median error, {np.median(knorm_err):.3g} % against the MCMC's "
             f"{med[('WEM-a', 1.0)]:.3g} %. The mechanism is: WEM's l2 loss spreads its noise over all 2J = {d} "
             f"counts of a month (norm about (2J + 1) x {scale:g} = {(d + 1) * scale:.0f}, a standard deviation of "
             f"{scale * math.sqrt((d + 1) * (d + 2) / d):.0f} per count), while PP adds discrete Laplace noise of "
             f"standard deviation {math.sqrt(2 * a) / (1 - a):.2f} to each count.")
    worse = [m for m in wem if worst[(m, 0.01)] >= worst[("PP", 0.01)]]
    if worse:
        note(f"At eps = 0.01 the worst errors are NOT smaller than PP's under {', '.join(worse)}; only the other WEM "
             "variants show the paper's pattern.")
    note("Differences in general: synthetic data, fewer replicates and MCMC settings of our own (the paper reports "
         "none); only the qualitative patterns can be compared.")
    if args.plot:
        from puffer.partial.plot import write_figures

        out = figure_dir(args.plot)
        paths = write_figures(study, s, out)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        z1s = np.linspace(0.05, 0.99, 40)
        for z0 in (0.0, 0.1, 0.3):
            ax.plot(z1s, [P.TPFramework.correlated_counts(20, z0, float(z)).delta_z for z in z1s], label=f"z0 = {z0:g}")
        ax.set_xlabel("z1")
        ax.set_ylabel("Delta_z (n = 20)")
        ax.legend()
        fig.tight_layout()
        paths.append(out / "fig4_delta_z.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
        wrote(paths)
    return 0


if __name__ == "__main__":
    from puffer.cli import quiet_on_broken_pipe  # `... | head` ends quietly, as the puffer command does

    raise SystemExit(quiet_on_broken_pipe(main))
