"""Epsilon-TP frameworks: public information z, secret pairs and the conditional family.

epsilon-TP frameworks: public information z, secret pairs and the conditional family Theta_z
(Seeman, Reimherr & Slavkovic, "Formal privacy for partially private data", Def 3, Eq. 10-11,
Examples 1-2, Lemma 8).

A :class:`TPFramework` is one Pufferfish framework per realised z. Finite families reuse
:class:`puffer.Framework` (its conditional laws given z are the laws of the statistic under
P(X | theta_z, s)); pairs whose secret is certain under theta_z (P(s | theta_z) in {0, 1}) are
dropped as Eq. 10 requires (``None`` conditionals). Closed-form families (correlated Bernoulli
counts of Figure 4, the Gaussian conditional of Example 1, SDL truncations of Example 2) carry
their exact Delta_z from :mod:`puffer.partial.sensitivity`.

>>> fw = TPFramework.correlated_counts(10, 0.1, 0.8)
>>> fw.delta_z
8.0
>>> fw.guarantee_fields()["family"]
'correlated_counts(n=10, z0=0.1, z1=0.8)'
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as V
from ..dist import DiscreteDist
from ..errors import ParameterError, ParameterTypeError
from ..framework import Framework
from . import sensitivity as S

__all__ = ["PublicInfo", "SecretPairs", "TPFramework"]


def _digest(obj: Any) -> str:
    try:
        s = json.dumps(obj, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        s = repr(obj)
    return hashlib.sha256(s.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class PublicInfo:
    """A realised public information z: ``value`` (any JSON-able description: totals, previous
    releases, structural facts) and a human-readable ``description``. ``digest()`` identifies it
    in guarantees."""

    value: Any = None
    description: str = ""

    def digest(self) -> str:
        return _digest({"z": self.value, "d": self.description})

    def __repr__(self) -> str:
        return f"PublicInfo({self.description or self.value!r})"


@dataclass(frozen=True)
class SecretPairs:
    """Discriminative secret pairs. ``kind`` in {"presence", "substitution", "binary", "custom"};
    ``pairs`` a tuple of (s1, s2) labels.

    >>> SecretPairs.binary(2).pairs
    (('X_0=0', 'X_0=1'), ('X_1=0', 'X_1=1'))
    """

    kind: str
    pairs: tuple[tuple[Hashable, Hashable], ...]

    def __post_init__(self) -> None:
        if self.kind not in ("presence", "substitution", "binary", "custom"):
            raise ParameterError("kind", self.kind, "presence, substitution, binary or custom")
        ps = tuple(tuple(p) for p in self.pairs)
        for p in ps:
            if len(p) != 2 or p[0] == p[1]:
                raise ParameterError("pairs", p, "pairs (s1, s2) of two distinct secrets")
        if not ps:
            raise ParameterError("pairs", self.pairs, "at least one pair")
        object.__setattr__(self, "pairs", ps)

    @classmethod
    def binary(cls, n: int) -> SecretPairs:
        """(X_i = 0, X_i = 1) for i < n (the paper's Examples 2, 4 and Figure 4)."""
        n = V.integer("n", n, lo=1)
        return cls("binary", tuple((f"X_{i}=0", f"X_{i}=1") for i in range(n)))

    @classmethod
    def substitution(cls, n: int, values: Sequence[Any]) -> SecretPairs:
        """(X_i = v1, X_i = v2) for i < n and v1 != v2 in ``values`` (bounded DP)."""
        n = V.integer("n", n, lo=1)
        vals = list(values)
        if len(vals) < 2:
            raise ParameterError("values", values, "at least two values")
        return cls("substitution", tuple((f"X_{i}={a}", f"X_{i}={b}") for i in range(n)
                                         for k, a in enumerate(vals) for b in vals[k + 1:]))

    @classmethod
    def presence(cls, n: int, values: Sequence[Any]) -> SecretPairs:
        """(record i present with value x, record i absent) (Kifer-Machanavajjhala, Eq. 7-9)."""
        n = V.integer("n", n, lo=1)
        return cls("presence", tuple((f"h_{i} in data, value {x}", f"h_{i} absent") for i in range(n)
                                     for x in values))

    @classmethod
    def custom(cls, pairs: Sequence[tuple[Hashable, Hashable]]) -> SecretPairs:
        return cls("custom", tuple(pairs))

    def digest(self) -> str:
        return _digest({"kind": self.kind, "pairs": [list(map(str, p)) for p in self.pairs]})


class TPFramework:
    """A framework for epsilon-TP at one realised public information z.

    Build with :meth:`from_conditionals` (finite families; Delta_z by the transport kernel),
    :meth:`correlated_counts` (Figure 4), :meth:`gaussian_conditional` (Example 1),
    :meth:`sdl_counts` (Example 2) or :meth:`assumed` (a stated Delta_z, flagged as assumed, as in
    the paper's case study where Delta_Z = 2).
    """

    def __init__(self, z: Any, family: str, pairs: SecretPairs | str, *, delta_z: float,
                 framework: Framework | None = None, assumptions: Sequence[str] = (), rich: bool = False):
        self.z = z if isinstance(z, PublicInfo) else PublicInfo(z)
        if not isinstance(family, str):
            raise ParameterTypeError("family", family, "a string descriptor of Theta_z")
        self.family = family
        if not isinstance(pairs, (SecretPairs, str)):
            raise ParameterTypeError("pairs", pairs, "a SecretPairs or a string descriptor")
        self.pairs = pairs
        self.framework = framework
        self.delta_z = float(V.nonneg("delta_z", delta_z, allow_inf=True))
        self.assumptions = tuple(assumptions)
        if rich and self.delta_z < 1.0:
            raise ParameterError("delta_z", self.delta_z, "Delta_z >= 1 for a rich family with the Hamming "
                                 "metric (Lemma 12): a smaller value indicates a modelling error")

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_conditionals(cls, z: Any, conditionals: Mapping[Hashable, Mapping[Hashable, DiscreteDist | None]],
                          pairs: Any, *, family: str = "finite", norm: Any = None, rich: bool = False) -> TPFramework:
        """``conditionals[theta_z][secret]`` = law of the statistic T(X) given the secret under
        theta_z (a DiscreteDist), or None when P(secret | theta_z) = 0; pairs with a certain or
        impossible secret are dropped (Eq. 10). Delta_z = max W_inf over thetas and pairs."""
        sp = pairs if isinstance(pairs, SecretPairs) else SecretPairs.custom(pairs)
        fw = Framework.from_conditionals(conditionals, list(sp.pairs), name=f"TP[{family}]")
        if not any(True for _ in fw.pair_laws()):
            raise ParameterError("conditionals", "no admissible pair", "at least one pair whose secrets both "
                                 "have positive probability under some theta_z (Eq. 10)")
        d = float(fw.w_inf(norm).value)
        return cls(z, f"{family}[{fw.digest()[:12]}]", sp, delta_z=d, framework=fw, rich=rich)

    @classmethod
    def correlated_counts(cls, n: int, z0: float, z1: float, *, z: Any = None) -> TPFramework:
        """Figure 4 family: P(X_i = 1 | X_j = 1, z) <= z1, P(X_i = 1 | X_j = 0, z) >= z0 (i != j);
        statistic S_n, pairs (X_j = 0, X_j = 1)."""
        d = S.delta_correlated_counts(n, z0, z1)
        return cls(z, f"correlated_counts(n={n}, z0={z0}, z1={z1})", SecretPairs.binary(n), delta_z=float(d))

    @classmethod
    def gaussian_conditional(cls, delta: float, n: int, *, z: Any = None, grid: Any = None,
                             **theta: float) -> TPFramework:
        """Example 1: X_i in [-Delta/2, Delta/2], (Xbar, X_1, Z) jointly normal; statistic Xbar.
        Delta_z = sup |c_1| Delta (Delta/n when Z is independent of X)."""
        d = S.delta_gaussian_conditional(delta, n, grid=grid, **theta)
        return cls(z, f"gaussian_conditional(Delta={delta}, n={n}, {grid if grid is not None else theta})",
                   "substitution X_i=v1 vs X_i=v2", delta_z=d)

    @classmethod
    def sdl_counts(cls, n: int, p: Any, *, z: Any = None, **constraint: Any) -> TPFramework:
        """Example 2: iid Bernoulli(p) records, S_n truncated by a k-anonymity / t-closeness /
        range constraint (keyword of :func:`~puffer.partial.sensitivity.delta_sdl_counts`)."""
        d = S.delta_sdl_counts(n, p, **constraint)
        return cls(z, f"sdl_counts(n={n}, p={p}, {constraint})", SecretPairs.binary(n), delta_z=float(d))

    @classmethod
    def assumed(cls, delta_z: float, *, z: Any = None, family: str = "unspecified",
                pairs: Any = "unspecified") -> TPFramework:
        """A stated Delta_z (not derived from a family), flagged "Delta_z assumed" in guarantees."""
        return cls(z, family, pairs, delta_z=delta_z, assumptions=("Delta_z assumed, not derived",))

    # ---------------------------------------------------------------- use
    def restrict(self, predicate: Callable[[float], bool], *, description: str = "public constraint") -> TPFramework:
        """Truncate every conditional law to the statistic values allowed by public information
        (renormalised, as in Lemma 8); secrets that lose all mass are dropped (Eq. 10)."""
        if self.framework is None:
            raise ParameterError("framework", self.family, "a finite family (from_conditionals) to truncate")
        if not callable(predicate):
            raise ParameterTypeError("predicate", predicate, "a callable value -> bool")
        fw = self.framework
        cond: dict[Hashable, dict[Hashable, DiscreteDist | None]] = {}
        for th in fw.thetas:
            cond[th] = {}
            for s in fw.secrets:
                law = fw.conditional(th, s)
                if law is None:
                    cond[th][s] = None
                    continue
                keep = np.array([bool(predicate(a)) for a in law.atoms])
                if not keep.any():
                    cond[th][s] = None
                    continue
                cond[th][s] = DiscreteDist(law.atoms[keep], law.probs[keep], normalize=True)
        pairs = self.pairs if isinstance(self.pairs, SecretPairs) else SecretPairs.custom(fw.pairs)
        z = PublicInfo(self.z.value, (self.z.description + "; " + description).strip("; "))
        return TPFramework.from_conditionals(z,
                                             cond, pairs, family=f"truncated({self.family})")

    def pairs_digest(self) -> str:
        return self.pairs.digest() if isinstance(self.pairs, SecretPairs) else _digest(self.pairs)

    def guarantee_fields(self) -> dict[str, Any]:
        """The descriptors a :class:`puffer.guarantees.TP` records."""
        return {"z": self.z.digest(), "family": self.family, "secret_pairs": self.pairs_digest(),
                "delta_z": self.delta_z}

    def __repr__(self) -> str:
        return f"TPFramework(family={self.family!r}, delta_z={self.delta_z!r}, z={self.z!r})"

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "TPFramework": (Ref("seeman2024", "Eq. 10"), Ref("seeman2024", "Lemma 8"),),
}
