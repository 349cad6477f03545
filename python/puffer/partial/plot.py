"""Figures 1-3 of the case study (matplotlib: the optional extra ``plot``, imported lazily)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ParameterError

__all__ = ["write_figures"]

_COLORS = {"Allegheny": "tab:red", "Erie": "tab:green", "Cameron": "tab:blue"}


def _plt() -> Any:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ParameterError("plot", "matplotlib not installed",
                             "pip install 'puffer-privacy[plot]' to draw the figures") from exc
    return plt


def write_figures(study: dict[str, Any], summ: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """Write fig1_case_rates.png, fig2_relative_error.png, fig3_contraction.png into ``out_dir``."""
    plt = _plt()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    eps_list, methods = study["eps"], study["methods"]
    paths = []
    # Figure 1: case rates over months (median and 5-95 % band over replicates) vs the truth
    fig, axes = plt.subplots(len(methods), len(eps_list), figsize=(4.5 * len(eps_list), 2.4 * len(methods)),
                             squeeze=False, sharex=True)
    for i, m in enumerate(methods):
        for k, e in enumerate(eps_list):
            ax = axes[i, k]
            for nm, rates in summ["fig1"][(m, e)].items():
                t = np.arange(1, rates.shape[1] + 1)
                col = _COLORS.get(nm, "k")
                ax.fill_between(t, np.percentile(rates, 5, 0), np.percentile(rates, 95, 0), color=col, alpha=0.2)
                ax.plot(t, np.median(rates, 0), color=col, lw=1, ls="--")
                ax.plot(t, summ["fig1_truth"][nm], color=col, lw=1.5, label=nm)
            ax.set_title(f"{m}, eps = {e:g}", fontsize=9)
            ax.set_yscale("symlog", linthresh=1e-3)
    axes[0, 0].legend(fontsize=7)
    fig.supxlabel("month")
    fig.supylabel("case rate (cases / population)")
    fig.tight_layout()
    p = out / "fig1_case_rates.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    # Figure 2: relative percentage error distributions
    fig, axes = plt.subplots(1, len(eps_list), figsize=(4.5 * len(eps_list), 3.5), squeeze=False)
    for k, e in enumerate(eps_list):
        ax = axes[0, k]
        data = [np.maximum(summ["fig2"][(m, e)], 1e-3) for m in methods]
        ax.boxplot(data, showfliers=False)
        ax.set_xticks(range(1, len(methods) + 1), methods)
        ax.set_yscale("log")
        ax.set_title(f"eps = {e:g}", fontsize=9)
        ax.set_ylabel("relative error of case counts (%)")
    fig.tight_layout()
    p = out / "fig2_relative_error.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    # Figure 3: contraction effects of the PP method
    fig, ax = plt.subplots(figsize=(7, 3.5))
    keys = sorted(summ["fig3"])
    effects = ["contracted_case_zeros", "contracted_death_zeros", "contracted_rates"]
    w = 0.8 / max(1, len(keys))
    for i, key in enumerate(keys):
        vals = [summ["fig3"][key][eff] for eff in effects]
        lab = f"eps={key[0]:g}, {key[1]} ({summ['fig3_counties'][key[1]]})"
        ax.bar(np.arange(len(effects)) + i * w, vals, width=w, label=lab)
    ax.set_xticks(np.arange(len(effects)) + 0.4 - w / 2, effects, fontsize=8)
    ax.set_ylabel("frequency (replicates x months)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    p = out / "fig3_contraction.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    return paths
