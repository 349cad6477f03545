"""Matplotlib plots of Figures 5 and 6 (amplification by iteration).

Matplotlib plots of Figures 5 and 6 (Pierquin, Bellet, Tommasi, Boussard 2024, App. F.5.4).
matplotlib is an optional extra (``pip install 'puffer-privacy[plot]'``), imported when a plot is drawn."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ParameterError
from .figures import FIGURE5, FIGURE6, figure_series

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_figure"]


def plot_figure(number: int, T_max: int = 200, *, ax: Axes | None = None, optimal: bool = True) -> Axes:
    """Draw Figure 5 or 6: formula (1) (solid), formula (2) (dashed) and, with ``optimal``, the
    optimal allocation (dotted) against T. Returns the matplotlib Axes."""
    if number not in (5, 6):
        raise ParameterError("number", number, "5 or 6")
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("puffer.iteration.plot needs matplotlib: pip install 'puffer-privacy[plot]'") from exc
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    import numpy as np

    T = np.arange(1, T_max + 1)
    for name in (FIGURE5 if number == 5 else FIGURE6):
        label = {"0": "0 (DP)", "1": "1 (group DP)"}.get(name, name)
        line, = ax.plot(T, figure_series(name, T_max, "uniform"), label=f"rho_t = {label} (1)")
        ax.plot(T, figure_series(name, T_max, "paper"), ls="--", color=line.get_color())
        if optimal:
            ax.plot(T, figure_series(name, T_max, "optimal"), ls=":", color=line.get_color())
    ax.set_xlabel("number of iterations T")
    ax.set_ylabel("privacy loss (Renyi bound, alpha = 2)")
    ax.set_yscale("log")
    ax.set_title(f"Figure {number}: formula (1) solid, (2) dashed, optimal dotted")
    ax.legend(fontsize=8)
    return ax
