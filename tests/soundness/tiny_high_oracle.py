"""mpmath truths for Renyi shift divergences at tiny shifts and high orders (issue 43, item 3).

Every built-in family (the families of extremes_oracle.py) at shifts 1e-20, 1e-8, 1e-3 and orders
1.5, 100, 1000, and at shifts 0.3, 1, 3 and orders 100, 1000, with the integrators of
extremes_oracle.py (the folded cancellation-free form for u <= 1, the definition in t = x - u
beyond; Laplace in closed form at enough digits to survive its cancellation, Gaussian alpha u^2/2).

``PYTHONPATH=tests/soundness python tests/soundness/tiny_high_oracle.py`` regenerates
tests/data/snd_tiny_high_truth.json (a few CPU-minutes).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import extremes_oracle as X
import mpmath as mp

TRUTH_FILE = Path(__file__).resolve().parent.parent / "data" / "snd_tiny_high_truth.json"
FAMILIES = X.FAMILIES


def cases() -> list[tuple[str, dict, float, float]]:
    out = []
    for fam, sh in FAMILIES:
        for u in (1e-20, 1e-8, 1e-3):
            for alpha in (1.5, 100.0, 1000.0):
                out.append((fam, sh, alpha, u))
        for u in (0.3, 1.0, 3.0):
            for alpha in (100.0, 1000.0):
                out.append((fam, sh, alpha, u))
    out.append(("gg", {"beta": 1.5}, 1000.0, 1.0))   # the case (already in the grid)
    return list({X.key(*c): c for c in out}.values())


def main() -> None:
    out = {}
    for c in cases():
        d = X.divergence(*c)
        out[X.key(*c)] = mp.nstr(d, 30)
        print(c, mp.nstr(d, 15), file=sys.stderr, flush=True)
    TRUTH_FILE.write_text(json.dumps({"dps": X.DPS, "truth": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
