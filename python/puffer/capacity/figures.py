"""Table 1 and Figures 1a, 1b, 2a, 2b of capacity bounded DP, recomputed.

Reproduction of Table 1 and Figures 1a, 1b, 2a, 2b of Chaudhuri, Imola, Machanavajjhala
2019 (Laplace eps_noise = 1, Gaussian sigma = 1, unit sensitivity, alpha in [1.1, 5.1]).

The "exact" curves are certified upper values of the restricted divergences (the paper does
not say how it computed them). :func:`figure_data` returns the numbers; :func:`plot` draws
them with matplotlib (the optional extra ``plot``; imported only when plotting).

>>> d = figure_data("1b", alphas=[2.0])
>>> [round(float(d[k][0]), 6) for k in ("lin", "quad", "cubic", "renyi")]
[0.405465, 0.438255, 0.474911, 0.619124]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from . import bounds as B
from . import divergences as Dv

__all__ = ["FIGURES", "figure_data", "plot", "table1", "format_table1"]

FIGURES = {
    "1a": ("laplace", "(lin, Rényi): paper upper bound, exact, Rényi DP — Laplace, eps = 1"),
    "1b": ("laplace", "exact linear, quadratic, cubic restricted vs unrestricted — Laplace, eps = 1"),
    "2a": ("gaussian", "(lin, Rényi): paper upper bound, exact, Rényi DP — Gaussian, sigma = 1"),
    "2b": ("gaussian", "exact linear, quadratic, cubic restricted vs unrestricted — Gaussian, sigma = 1"),
}


def _exact_curve(family: str, alphas: np.ndarray, k: int, s: float = 1.0) -> np.ndarray:
    from .._core import capacity as core
    code = 1 if family == "laplace" else 0
    return np.asarray(core.restricted_renyi_batch(code, np.full(alphas.size, s), alphas, k))


def _renyi(family: str, a: float, s: float = 1.0) -> float:
    return Dv.laplace_renyi(1.0, s, a) if family == "laplace" else Dv.gaussian_renyi(1.0, s, a)


def figure_data(name: str, alphas: Any = None, *, n: int = 101) -> dict[str, np.ndarray]:
    """Curves of figure ``name`` ∈ {"1a", "1b", "2a", "2b"} on ``alphas`` (default: n points in [1.1, 5.1])."""
    if name not in FIGURES:
        raise ParameterError("name", name, f"one of {sorted(FIGURES)}")
    family = FIGURES[name][0]
    al = np.linspace(1.1, 5.1, n) if alphas is None else np.asarray(alphas, dtype=float)
    if al.ndim != 1 or al.size == 0 or not np.all(al > 1) or not np.all(np.isfinite(al)):
        raise ParameterError("alphas", alphas, "a non-empty 1-D array of finite orders > 1")
    out: dict[str, np.ndarray] = {"alpha": al, "renyi": np.array([_renyi(family, a) for a in al])}
    out["lin"] = _exact_curve(family, al, 1)
    if name.endswith("a"):
        out["paper_ub"] = np.array([B.paper_bound(family, [1.0], a) for a in al])
    else:
        out["quad"] = _exact_curve(family, al, 2)
        out["cubic"] = _exact_curve(family, al, 3)
    return out


def plot(name: str, ax: Any = None, *, alphas: Any = None, path: str | None = None) -> Any:
    """Draw figure ``name`` (needs matplotlib: ``pip install 'puffer-privacy[plot]'``); returns the Axes."""
    try:
        import matplotlib
        if ax is None and path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("puffer.capacity.plot needs matplotlib: pip install 'puffer-privacy[plot]'") from exc
    d = figure_data(name, alphas)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    a = d["alpha"]
    if name.endswith("a"):
        ax.plot(a, d["paper_ub"], "-", label="(lin, Rényi) upper bound (paper)")
        ax.plot(a, d["lin"], "--", label="(lin, Rényi) exact")
        ax.plot(a, d["renyi"], "-.", label="Rényi DP")
        ax.set_ylim(0, 2)
    else:
        ax.plot(a, d["lin"], "-", label="linear")
        ax.plot(a, d["quad"], "--", label="quadratic")
        ax.plot(a, d["cubic"], ":", label="cubic")
        ax.plot(a, d["renyi"], "-.", label="unrestricted")
        ax.set_ylim(0, 1 if name == "1b" else 2)
    ax.set_xlabel("alpha")
    ax.set_ylabel("privacy parameter")
    ax.set_title(f"Fig {name}: " + FIGURES[name][1], fontsize=8)
    ax.legend(fontsize=7)
    if path is not None:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax


def table1(eps_noise: float = 1.0, sigma: float = 1.0, alpha: float = 2.0) -> list[dict[str, Any]]:
    """Rows of Table 1 (unit sensitivity, d = 1) with the exact and sound values next to the printed ones.

    >>> rows = table1(1.0, 1.0, 2.0)
    >>> [round(r["lin_exact"], 6) for r in rows]
    [0.225987, 0.5, 0.405465, 0.693147]
    """
    from .mechanisms import gaussian_lin_kl, gaussian_lin_renyi, laplace_lin_kl, laplace_lin_renyi
    e, s, a = float(eps_noise), float(sigma), float(alpha)
    rows = [
        {"divergence": "KL", "mechanism": f"Laplace eps={e:g}", "lin_paper": laplace_lin_kl(e).eps,
         "lin_exact": laplace_lin_kl(e).eps, "lin_sound": laplace_lin_kl(e).eps,
         "unrestricted": Dv.laplace_kl(e), "unrestricted_note": "= (Thm 8)", "lin_ref": "= (Thm 9)"},
        {"divergence": "KL", "mechanism": f"Gaussian sigma={s:g}", "lin_paper": gaussian_lin_kl(s).eps,
         "lin_exact": gaussian_lin_kl(s).eps, "lin_sound": gaussian_lin_kl(s).eps,
         "unrestricted": Dv.gaussian_kl(s), "unrestricted_note": "= (Thm 12, alpha->1)", "lin_ref": "= (Thm 10)"},
        {"divergence": f"Renyi a={a:g}", "mechanism": f"Laplace eps={e:g}",
         "lin_paper": laplace_lin_renyi(e, 1.0, a, "paper").eps, "lin_exact": laplace_lin_renyi(e, 1.0, a).eps,
         "lin_sound": laplace_lin_renyi(e, 1.0, a, "sound").eps, "unrestricted": Dv.laplace_renyi(e, 1.0, a),
         "unrestricted_note": f"= (Thm 11); >= {Dv.laplace_renyi_lower_bound(e, 1.0, a):.6g} (Cor 1 corrected)",
         "lin_ref": "<= (Cor 2 printed; unsound for alpha > 2, small eps)"},
        {"divergence": f"Renyi a={a:g}", "mechanism": f"Gaussian sigma={s:g}",
         "lin_paper": gaussian_lin_renyi(s, 1.0, a, "paper").eps, "lin_exact": gaussian_lin_renyi(s, 1.0, a).eps,
         "lin_sound": gaussian_lin_renyi(s, 1.0, a, "sound").eps, "unrestricted": Dv.gaussian_renyi(s, 1.0, a),
         "unrestricted_note": "= (Thm 12)", "lin_ref": "<= (Cor 2 printed; unsound for alpha > 2, small shift)"},
    ]
    return rows


def format_table1(rows: list[dict[str, Any]]) -> str:
    """Table 1 rows (from :func:`table1`) as a plain-text table."""
    head = (f"{'divergence':<14} {'mechanism':<18} {'lin (paper)':>12} {'lin exact':>12} {'lin sound':>12} "
            f"{'unrestricted':>13}  notes")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['divergence']:<14} {r['mechanism']:<18} {r['lin_paper']:>12.6f} {r['lin_exact']:>12.6f} "
                     f"{r['lin_sound']:>12.6f} {r['unrestricted']:>13.6f}  lin {r['lin_ref']}; unrestricted "
                     f"{r['unrestricted_note']}")
    return "\n".join(lines)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "table1": (Ref("chaudhuri2019", "Table 1"), Ref("chaudhuri2019", "Thm 8"), Ref("chaudhuri2019", "Thm 11"),
               Ref("chaudhuri2019", "Thm 12"),),
    "figure_data": (Ref("chaudhuri2019", "Figure 1"), Ref("chaudhuri2019", "Figure 2"),),
}
