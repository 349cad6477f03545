"""Noise on a power-of-two lattice: safe in floating point and reproducible from a key.

Textbook floating-point noise leaks the input through the pattern of representable outputs,
whatever the generator (Mironov 2012). A lattice release publishes ``(round_half_even(x / g) +
Z) g`` with ``g = 2^k`` and ``Z`` an exact draw of a declared integer law, from a keyed ChaCha20
stream: every output is a lattice point whose law depends on the input only through its lattice
point, and the same key and position give the same value anywhere (``--rerun``, Spark, Dask).

* :mod:`.laws` -- the rounded Laplace (post-processing of the continuous Laplace: every
  divergence at most the continuous one: data processing) and the discrete Gaussian
  (Canonne, Kamath & Steinke 2020, Prop 5), with 64-bit dyadic parameters.
* :mod:`.plan` -- the lattice, the padding that snapping costs, the calibrated law.
* :mod:`.sample` -- the keyed sampler (exact inversion, ``cpp/sampling/lattice.hpp``).

Published noise (``puffer noise``, :func:`puffer.io.noise_file`, Spark, Dask) uses this by
default; :mod:`puffer.secure` is the same with a key drawn from OS entropy per call.
"""
from __future__ import annotations

from .laws import FAMILIES, MAX_BETA, MAX_SIGMA, LatticeLaw
from .plan import NORMS, LatticePlan, granularity_exp, lattice_plan
from .sample import add_lattice_noise, check_lattice_values, lattice_integers

__all__ = ["LatticeLaw", "LatticePlan", "lattice_plan", "add_lattice_noise", "lattice_integers",
           "check_lattice_values", "granularity_exp", "FAMILIES", "MAX_BETA", "MAX_SIGMA", "NORMS"]
