"""The pictures users expect (matplotlib, the optional extra ``puffer-privacy[plot]``, imported lazily).

* :func:`transport_plan` — the quantile coupling of a secret pair's conditional laws, with the
  pair of atoms that sets W_inf (the Figures of Ding 2022, Kantorovich mechanism).
* :func:`epsilon_curves` — eps(alpha) of RPP guarantees (RPPCurve, RPP points, PP as alpha = inf).
* :func:`noise_vs_eps` — noise scale against the target eps for the mechanisms of a framework
  (the comparison ``puffer demo`` prints, as a picture).
* :func:`audit_chart` — claimed eps against the empirical lower bound of :func:`puffer.audit.empirical`.
* :func:`demo_figures` — all four for the ``puffer demo`` framework (``puffer demo --plot DIR``).
* :func:`theta_profile` — Delta_G of a Markov framework fitted from traces against the fit's
  level, beside the point estimate's and group DP's (:func:`puffer.models.theta_profile`).

Every function returns a :class:`matplotlib.figure.Figure` (or draws on ``ax=``); :func:`save`
writes one to a file. The non-interactive Agg backend is used unless pyplot was already set up.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._mpl import _fig_ax
from .errors import ParameterError, ParameterTypeError

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import NDArray

__all__ = ["transport_plan", "epsilon_curves", "noise_vs_eps", "audit_chart", "save", "demo_figures", "theta_profile"]


def save(fig: Any, path: str | os.PathLike[str], *, dpi: int = 110) -> str:
    """Write ``fig`` to ``path`` (format from the extension); returns the path."""
    p = os.fspath(path)
    d = os.path.dirname(p)
    if d and not os.path.isdir(d):
        raise ParameterError("path", p, "a file in an existing directory")
    fig.savefig(p, dpi=dpi)
    return p


def transport_plan(P: Any, Q: Any, *, ax: Any = None, labels: tuple[str, str] = ("s_i", "s_j"),
                   title: str | None = None) -> Figure:
    """The quantile (north-west corner) coupling pi* of two 1-D laws: a disc per (x, x') with
    area proportional to its mass, the marginals along the axes, the diagonal x = x', and the
    atom pair at the largest |x - x'| (W_inf, the Wasserstein mechanism's sensitivity)."""
    from . import transport
    from .dist import DiscreteDist

    for name, d in (("P", P), ("Q", Q)):
        if not isinstance(d, DiscreteDist):
            raise ParameterTypeError(name, d, "a DiscreteDist")
        if d.dim != 1:
            raise ParameterError(name, f"a law on R^{d.dim}", "a law on R (the quantile coupling is 1-D)")
    plan = transport.quantile_coupling(P, Q)
    x = np.asarray(plan.source, float)
    y = np.asarray(plan.target, float)
    m = np.asarray(plan.mass, float)
    fig, ax = _fig_ax(ax, (5.2, 4.6))
    ax.scatter(x, y, s=600.0 * m / m.max() * min(1.0, 6.0 / m.size), alpha=0.55,
               color="tab:blue", edgecolor="navy", label="plan mass")
    lo = float(min(x.min(), y.min())) - 0.5
    hi = float(max(x.max(), y.max())) + 0.5
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--", label="x = x'")
    k = int(np.argmax(np.abs(x - y)))
    ax.plot([x[k], x[k]], [x[k], y[k]], color="crimson", lw=2,
            label=f"W_inf = |x - x'| = {abs(x[k] - y[k]):.3g}")
    pa, pp = np.asarray(P.atoms, float), np.asarray(P.probs, float)
    qa, qp = np.asarray(Q.atoms, float), np.asarray(Q.probs, float)
    band = 0.12 * (hi - lo)
    ax.bar(pa, pp / pp.max() * band, bottom=lo, width=0.6 * _spacing(pa), color="tab:orange", alpha=0.6,
           label=f"law | {labels[0]}")
    ax.barh(qa, qp / qp.max() * band, left=lo, height=0.6 * _spacing(qa), color="tab:green", alpha=0.6,
            label=f"law | {labels[1]}")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"x (query given {labels[0]})")
    ax.set_ylabel(f"x' (query given {labels[1]})")
    ax.set_title(title or "quantile coupling of the conditional laws")
    ax.legend(loc="lower right", fontsize=7)
    return fig


def _spacing(a: NDArray[np.float64]) -> float:
    d = np.diff(np.unique(a))
    return float(d.min()) if d.size else 1.0


def epsilon_curves(guarantees: Mapping[str, Any], *, alphas: Any = None, ax: Any = None,
                   title: str | None = None) -> Figure:
    """eps(alpha) on a log alpha axis for each labelled guarantee: an RPPCurve (line), an RPP
    (a point), a PP with delta = 0 (a horizontal line: it holds at every order)."""
    from .guarantees import PP, RPP, RPPCurve

    if not isinstance(guarantees, Mapping) or not guarantees:
        raise ParameterTypeError("guarantees", guarantees, "a non-empty mapping label -> guarantee")
    grid = np.geomspace(1.05, 256.0, 60) if alphas is None else np.asarray(alphas, float)
    fig, ax = _fig_ax(ax, (5.6, 4.0))
    for lab, g in guarantees.items():
        if isinstance(g, RPPCurve):
            if g.fn is not None:
                ys = [float(g.fn(a)) for a in grid]
                ax.plot(grid, ys, label=lab)
            else:
                fa = [(a, e) for a, e in zip(g.alphas, g.eps) if math.isfinite(a)]
                ax.plot([a for a, _ in fa], [e for _, e in fa], label=lab)
        elif isinstance(g, RPP):
            ax.plot([g.alpha], [g.eps], "o", label=lab)
        elif isinstance(g, PP) and g.delta == 0:
            ax.axhline(g.eps, ls=":", color="k", lw=1, label=f"{lab} (pure PP, every order)")
        else:
            raise ParameterTypeError(f"guarantees[{lab!r}]", g, "an RPPCurve, RPP or pure PP")
    ax.set_xscale("log")
    lines = [y for ln in ax.get_lines() for y in np.atleast_1d(ln.get_ydata())]
    if lines and min(lines) > 0:
        ax.set_yscale("log")
    ax.set_xlabel("Renyi order alpha")
    ax.set_ylabel("eps(alpha)")
    ax.set_title(title or "Renyi Pufferfish privacy curves")
    ax.legend(fontsize=7)
    return fig


def noise_vs_eps(framework: Any, *, eps: Sequence[float] | None = None,
                 mechanisms: Mapping[str, Callable[[float], Any]] | None = None,
                 delta: float | None = 1e-5, alpha: float | None = 2.0, ax: Any = None,
                 title: str | None = None) -> Figure:
    """Noise scale (std. dev. for the Gaussian families, b for Laplace) of each mechanism against
    the target eps. ``mechanisms`` maps a label to ``eps -> mechanism``; default: the rows of
    ``puffer run`` for the framework (see :func:`puffer.config.build_mechanisms`)."""
    grid = np.geomspace(0.25, 4.0, 9) if eps is None else np.asarray(eps, float)
    if mechanisms is None:
        from .config import build_mechanisms
        target = {"eps": 1.0, **({"delta": delta} if delta else {}), **({"alpha": alpha} if alpha else {})}
        labels = [lab for lab, _ in build_mechanisms(framework, target)]
        # rebuilt per eps; the labels do not depend on eps, so rows are matched by index
        def row(i: int) -> Callable[[float], Any]:
            return lambda e: build_mechanisms(framework, dict(target, eps=float(e)))[i][1]()
        mechanisms = {lab: row(i) for i, lab in enumerate(labels)}
    fig, ax = _fig_ax(ax, (5.6, 4.0))
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("v", ":"), ("D", "-"), ("x", "--"), ("*", "-.")]
    for k, (lab, make_m) in enumerate(mechanisms.items()):
        ys = []
        for e in grid:
            m = make_m(float(e))
            ys.append(0.0 if m.noise is None else float(m.noise.scale))
        mk, ls = styles[k % len(styles)]
        ax.plot(grid, ys, marker=mk, ls=ls, ms=4, label=lab)
    g = getattr(framework, "group_sensitivity", None)
    if g:
        ax.plot(grid, g / grid, color="grey", ls="--", lw=1, label="group DP, Laplace b = Delta_group / eps")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(grid, [f"{e:g}" for e in grid])
    ax.minorticks_off()
    ax.set_xlabel("target eps")
    ax.set_ylabel("noise scale")
    ax.set_title(title or "noise needed against the privacy target")
    ax.legend(fontsize=6)
    return fig


def theta_profile(profile: Any, *, ax: Any = None, title: str | None = None) -> Figure:
    """Delta_G against the level of the fitted Theta (a :class:`puffer.models.theta.ThetaProfile`),
    with the point estimate's Delta_G and group DP's sensitivity as horizontal references (log
    scale: the gain over group DP is the gap)."""
    from .models.theta import ThetaProfile

    if not isinstance(profile, ThetaProfile):
        raise ParameterTypeError("profile", profile, "a ThetaProfile (puffer.models.theta_profile)")
    return cast("Figure", profile.plot(ax, title=title))


def audit_chart(reports: Sequence[tuple[str, Any]] | Mapping[str, Any], *, ax: Any = None,
                title: str | None = None) -> Figure:
    """Horizontal bars: claimed eps and the empirical lower bound (at the report's confidence)
    for each labelled :class:`~puffer.audit.AuditReport`; violations in red."""
    from .audit import AuditReport

    items = list(reports.items()) if isinstance(reports, Mapping) else list(reports)
    if not items:
        raise ParameterError("reports", reports, "at least one (label, AuditReport)")
    for lab, r in items:
        if not isinstance(r, AuditReport):
            raise ParameterTypeError(f"reports[{lab!r}]", r, "an AuditReport")
    fig, ax = _fig_ax(ax, (6.4, 0.55 * len(items) + 1.6))
    yy = np.arange(len(items))
    claimed = [r.claimed for _, r in items]
    lower = [r.lower for _, r in items]
    ax.barh(yy + 0.2, claimed, height=0.38, color="lightgrey", edgecolor="grey", label="claimed eps")
    ax.barh(yy - 0.2, lower, height=0.38, color=["crimson" if r.violated else "tab:blue" for _, r in items],
            label="empirical lower bound")
    for y, (_, r) in zip(yy, items):
        ax.text(max(r.lower, 0) + 0.01 * max(claimed + lower), y - 0.2, f"{r.ratio:.2f}", va="center", fontsize=7)
    ax.set_yticks(yy, [f"{lab}\n{r.describe_claim()}" for lab, r in items], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("eps")
    conf = items[0][1].confidence
    ax.set_title(title or f"empirical audit: lower bounds at {conf:g} confidence\n(label: ratio = lower / claimed)",
                 fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def demo_figures(directory: str | os.PathLike[str], *, config: Mapping[str, Any] | None = None, n: int = 40_000,
                 rng: Any = 2026, eps: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0),
                 progress: bool | None = None) -> list[str]:
    """Write the four figures for a framework description (default: the ``puffer demo``
    framework) into ``directory`` (created if missing); returns the paths: transport_plan.png,
    epsilon_curves.png, noise_vs_eps.png (on the ``eps`` grid), audit.png (``n`` outputs per
    secret)."""
    import sys

    from .audit import empirical
    from .config import build_framework, build_mechanisms, validate_config

    if config is None:
        from .config.schema import DEMO as config
    config = validate_config(config)
    show = sys.stderr.isatty() if progress is None else bool(progress)

    def say(msg: str) -> None:
        if show:
            print(f"  .. plot: {msg}", file=sys.stderr, flush=True)

    d = os.fspath(directory)
    os.makedirs(d, exist_ok=True)
    target = config["target"]
    fw = build_framework(config["model"])
    say("calibrating the mechanisms")
    mechs = [(lab, make()) for lab, make in build_mechanisms(fw, target)]
    th, (si, sj) = cast("tuple[Any, Any]", mechs[0][1].sensitivity.witness)  # the Wasserstein row has one
    out = [save(transport_plan(fw.conditional(th, si), fw.conditional(th, sj), labels=(si, sj),
                               title=f"worst pair {si} vs {sj}\nprior {th}"), os.path.join(d, "transport_plan.png"))]
    from .guarantees import PP, RPPCurve
    curves: dict[str, Any] = {lab: m.guarantee for lab, m in mechs if isinstance(m.guarantee, RPPCurve)}
    curves.update({lab: m.guarantee for lab, m in mechs if isinstance(m.guarantee, PP) and not m.guarantee.delta})
    out.append(save(epsilon_curves(curves), os.path.join(d, "epsilon_curves.png")))
    say(f"noise scale on {len(eps)} targets eps")
    out.append(save(noise_vs_eps(fw, eps=eps, delta=target.get("delta"), alpha=target.get("alpha")),
                    os.path.join(d, "noise_vs_eps.png")))
    reports = []
    for lab, m in mechs:
        say(f"auditing {lab}")
        reports.append((lab, empirical(m, n=n, rng=rng, progress=progress)))
    out.append(save(audit_chart(reports), os.path.join(d, "audit.png")))
    return out
