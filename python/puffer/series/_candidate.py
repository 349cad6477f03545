"""One theorem's calibration of a series (a record shared by :mod:`puffer.series.quilt`, which
computes it, and :mod:`puffer.series._plan`, which chooses among them)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..refs import Ref


@dataclass(frozen=True)
class Candidate:
    """One theorem's calibration: the common scale, the certified eps of the whole series at it
    (rounded up), the binding secret, the theorem's name and its references."""

    name: str
    scale: float
    eps: float
    binding: dict[str, Any]
    refs: tuple[Ref, ...]
    summary: str
    #: the lattice padding quantity of the theorem (see SeriesWindow.lattice_sensitivity)
    lattice: float = math.inf
