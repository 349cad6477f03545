"""The matplotlib set-up shared by :mod:`puffer.plot` and the result objects that draw themselves
(:meth:`puffer.models.theta.ThetaProfile.plot`): matplotlib is the optional extra
``puffer-privacy[plot]``, imported on first use, with the non-interactive Agg backend unless pyplot
was already set up."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _mpl() -> type[Figure]:
    try:
        import matplotlib
    except ModuleNotFoundError as exc:  # an optional extra: say how to get it
        raise ModuleNotFoundError("puffer.plot needs matplotlib: pip install 'puffer-privacy[plot]'") from exc
    import sys
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    from matplotlib.figure import Figure
    return Figure


def _fig_ax(ax: Any, size: tuple[float, float]) -> tuple[Figure, Any]:
    if ax is not None:
        return ax.figure, ax
    Figure = _mpl()
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()
