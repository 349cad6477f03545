"""Pufferfish frameworks: secrets, secret pairs, priors and the conditional query laws.

Pufferfish frameworks (S, Q, Theta): secrets, discriminative secret pairs, priors, and the
conditional query laws mu_i^theta = P(f(X) | s_i, theta) that every sensitivity is built from
(Pierquin et al. 2024; Ding 2022).

A :class:`Framework` holds, for every prior theta and every secret s with P(s | theta) > 0, the
law of the query output given s. Pairs whose secrets have zero probability under a prior are
skipped for that prior and listed in :attr:`Framework.skipped`. Pairs are unordered for every
mechanism puffer implements (W-infinity, W_p, near radius and the Kantorovich theorems are
symmetric), so (a, b) and (b, a) are merged.

Ways to build one:

* ``Framework(secrets, pairs, priors, query)``: priors are joint pmfs over small datasets
  (enumeration); secrets are predicates on a dataset; the query maps a dataset to R or R^d.
* :meth:`Framework.from_conditionals`: the conditional laws directly, per prior and secret.
* :meth:`Framework.from_joint_counts`: a contingency table of (secret value, query value)
  counts, e.g. the Adult race x education table of Ding 2022 (exact masses).
* :mod:`puffer.models`: independent users, the correlated examples of Pierquin et al. 2024 and Markov
  chains (computed in C++).
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from . import _validate as V
from .dist import DiscreteDist
from .errors import ParameterError, ParameterTypeError

__all__ = ["Framework", "Sensitivity", "PairRecord", "Cost"]


@dataclass(frozen=True)
class PairRecord:
    """One (prior, pair) evaluation of a sensitivity."""

    theta: Hashable
    pair: tuple[Hashable, Hashable]
    value: float


@dataclass(frozen=True)
class Cost:
    """Estimated cost of :meth:`Framework.w_inf` before computing it: ``operations`` (multiply-adds
    and level comparisons), ``peak_bytes`` (memory the computation allocates on top of what the
    framework holds), ``seconds`` (rough wall time on the threads given, from throughputs
    measured on a 2-core AMD EPYC in bench/RESULTS.md; a different machine scales it).

    >>> Cost(2.0e9, 3 * 2**20, 1.25)
    Cost(2e+09 ops, 3 MiB, ~1.2 s)
    """

    operations: float
    peak_bytes: float
    seconds: float

    def __repr__(self) -> str:
        b = self.peak_bytes
        mem = f"{b / 2**30:.3g} GiB" if b >= 2**30 else f"{b / 2**20:.3g} MiB" if b >= 2**20 else f"{b / 2**10:.3g} KiB"
        return f"Cost({self.operations:.3g} ops, {mem}, ~{self.seconds:.2g} s)"


# Throughput of the 1-D W_inf level walk (atoms per second per thread), bench/RESULTS.md.
_W_INF_ATOMS_PER_SECOND = 5e7


@dataclass(frozen=True)
class Sensitivity:
    """A sensitivity (max over priors and pairs) with where it was attained.

    ``kind`` names the quantity (``"w_inf"``, ``"w_p"``, ``"near_radius"``, ``"plan"`` ...),
    ``witness`` is the (theta, pair) attaining the max, ``records`` the per-(theta, pair) values.
    """

    value: float
    kind: str
    witness: tuple[Any, ...] | None   # (theta, pair) for the sensitivities computed from a framework
    norm: float | None = None
    records: tuple[PairRecord, ...] = field(default=(), repr=False)
    params: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        w = None if self.witness is None else {"theta": _jsonable(self.witness[0]),
                                               "pair": [_jsonable(s) for s in self.witness[1]]}
        return {"value": self.value if math.isfinite(self.value) else "inf", "kind": self.kind,
                "norm": self.norm, "witness": w, **({"params": self.params} if self.params else {})}


def _jsonable(x: Any) -> Any:
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, (tuple, list)):
        return [_jsonable(v) for v in x]
    return repr(x)


def _integer_lattice(points: Any) -> tuple[float, float] | None:
    """(step, offset) of the integer points (gcd of their differences, the smallest point), or None
    when some point is not an integer below 2^52."""
    p = np.asarray(points, dtype=np.float64)
    if p.size == 0 or not np.all(p == np.round(p)) or np.abs(p).max() >= 2.0 ** 52:
        return None
    n = np.round(p).astype(np.int64)
    g = int(np.gcd.reduce(n - n.min())) if n.size > 1 else 0
    return float(g or 1), float(n.min())


def _canon_pairs(secrets: Sequence[Hashable], pairs: Any) -> list[tuple[Hashable, Hashable]]:
    known = set(secrets)
    if isinstance(pairs, str):
        if pairs != "all":
            raise ParameterError("pairs", pairs, "'all' or a sequence of (secret, secret) pairs")
        if len(secrets) < 2:
            raise ParameterError("pairs", pairs, f"'all' over at least two secrets (the framework has "
                                 f"{len(secrets)}: {list(secrets)!r}); a pair needs two")
        return [(a, b) for i, a in enumerate(secrets) for b in secrets[i + 1:]]
    try:
        items = list(pairs)
    except TypeError as exc:
        raise ParameterTypeError("pairs", pairs, "a sequence of (secret, secret) pairs") from exc
    out, seen = [], set()
    for pr in items:
        if not isinstance(pr, (tuple, list)) or len(pr) != 2:
            raise ParameterError("pairs", pr, "pairs of two secrets")
        a, b = pr
        for s in (a, b):
            if s not in known:
                raise ParameterError("pairs", pr, f"pairs of known secrets (unknown secret {s!r})")
        if a == b:
            raise ParameterError("pairs", pr, "two different secrets")
        key = frozenset((a, b))
        if key not in seen:
            seen.add(key)
            out.append((a, b))
    if not out:
        raise ParameterError("pairs", pairs, "at least one pair")
    return out


class Framework:
    """A Pufferfish framework with its conditional query laws.

    Parameters
    ----------
    secrets : mapping label -> predicate(dataset) -> bool
        The secrets s_i as events about the dataset.
    pairs : sequence of (label, label), or ``"all"``
        The discriminative pairs Q (unordered).
    priors : mapping label -> (datasets, probs) or a sequence of them
        Each prior theta is a joint pmf over datasets: ``datasets`` an array of shape (N, n)
        (one row per dataset) or a list of datasets, ``probs`` their probabilities. Masses given
        as ``Fraction`` are kept exact.
    query : callable(dataset) -> float or array of shape (d,)
        The query f; its output dimension must be the same for every dataset.
    name : str
        A name shown in the repr and in reports.
    group_sensitivity : float, optional
        Delta_GROUP, the query's range over the whole correlated group: what group DP would
        calibrate to (the mechanisms' ``group`` comparison); None where there is no group.
    group_note : str
        What the group is, shown with that comparison.

    Examples
    --------
    Two correlated bits (Pierquin et al. 2024, Example 1, p = 1/2, rho = 0.3), counting query:

    >>> from fractions import Fraction as F
    >>> data = [(0, 0), (0, 1), (1, 0), (1, 1)]
    >>> probs = [F(13, 40), F(7, 40), F(7, 40), F(13, 40)]
    >>> fw = Framework({"X1=0": lambda x: x[0] == 0, "X1=1": lambda x: x[0] == 1},
    ...                [("X1=0", "X1=1")], {"theta": (data, probs)}, query=sum)
    >>> fw.conditional("theta", "X1=1")
    DiscreteDist(atoms=[1., 2.], probs=[7/20, 13/20], exact)
    """

    def __init__(self, secrets: Mapping[Hashable, Callable[[Any], bool]], pairs: Any,
                 priors: Any, query: Callable[[Any], Any], *, name: str = "framework",
                 group_sensitivity: float | None = None, group_note: str = ""):
        if not isinstance(secrets, Mapping) or not secrets:
            raise ParameterTypeError("secrets", secrets, "a non-empty mapping label -> predicate")
        for lab, pred in secrets.items():
            if not callable(pred):
                raise ParameterTypeError(f"secrets[{lab!r}]", pred, "a callable predicate")
        if not callable(query):
            raise ParameterTypeError("query", query, "a callable dataset -> value")
        prior_map = self._prior_map(priors)
        laws: dict[tuple[Hashable, Hashable], DiscreteDist] = {}
        sprob: dict[tuple[Hashable, Hashable], float] = {}
        dim = None
        for th, (datasets, probs) in prior_map.items():
            exact = any(isinstance(p, (Fraction, str)) for p in probs)
            ps = [Fraction(p) if exact else float(p) for p in probs]
            if len(ps) != len(datasets):
                raise ParameterError(f"priors[{th!r}]", f"{len(datasets)} datasets, {len(ps)} probs",
                                     "one probability per dataset")
            if any((p < 0) or (not exact and not math.isfinite(p)) for p in ps):
                raise ParameterError(f"priors[{th!r}]", probs, "finite probabilities >= 0")
            total = sum(ps, Fraction(0) if exact else 0.0)
            if (exact and total != 1) or (not exact and abs(total - 1.0) > 1e-9):
                raise ParameterError(f"priors[{th!r}]", f"probabilities summing to {total}",
                                     "a distribution (probabilities summing to 1)")
            outs = []
            for ds in datasets:
                y = np.atleast_1d(np.asarray(query(ds), dtype=np.float64))
                if y.ndim != 1 or not np.isfinite(y).all():
                    raise ParameterError("query", f"{y!r} on dataset {ds!r}", "a finite number or 1-D vector")
                if dim is None:
                    dim = y.shape[0]
                elif y.shape[0] != dim:
                    raise ParameterError("query", f"output of dimension {y.shape[0]} on dataset {ds!r}",
                                         f"the same output dimension ({dim}) on every dataset")
                outs.append(y)
            Y = np.array(outs)
            for s, pred in secrets.items():
                mask = [bool(pred(ds)) for ds in datasets]
                mass = sum((p for p, m in zip(ps, mask) if m), Fraction(0) if exact else 0.0)
                sprob[(th, s)] = float(mass)
                if mass == 0:
                    continue
                sel = [i for i, m in enumerate(mask) if m and ps[i] != 0]
                atoms = Y[sel, 0] if dim == 1 else Y[sel]
                cond = [ps[i] / mass for i in sel]
                laws[(th, s)] = DiscreteDist(atoms, cond, normalize=not exact)
        self._setup(list(secrets), pairs, list(prior_map), laws, sprob, dim or 1, name,
                    group_sensitivity, group_note)

    # ------------------------------------------------------------------ construction helpers
    @staticmethod
    def _prior_map(priors: Any) -> dict[Hashable, tuple[list[Any], list[Any]]]:
        if isinstance(priors, Mapping):
            items = list(priors.items())
        elif isinstance(priors, (list, tuple)):
            items = list(enumerate(priors))
        else:
            raise ParameterTypeError("priors", priors, "a mapping or sequence of (datasets, probs)")
        if not items:
            raise ParameterError("priors", priors, "at least one prior")
        out = {}
        for lab, pr in items:
            if not isinstance(pr, (tuple, list)) or len(pr) != 2:
                raise ParameterTypeError(f"priors[{lab!r}]", pr, "a (datasets, probs) pair")
            datasets, probs = pr
            out[lab] = (list(datasets), list(probs))
        return out

    def _setup(self, secrets: Sequence[Hashable], pairs: Any, thetas: list[Hashable],
               laws: dict[tuple[Hashable, Hashable], Any], sprob: dict[tuple[Hashable, Hashable], float],
               dim: int, name: str, group_sensitivity: float | None = None, group_note: str = "",
               lazy: bool = False) -> None:
        self._secrets: Sequence[Hashable]
        self._pairs: Sequence[tuple[Hashable, Hashable]]
        if lazy:  # secrets and pairs generated on demand by a model (distinct and canonical by construction)
            self._secrets, self._pairs = secrets, pairs
        else:
            if len(set(secrets)) != len(secrets):
                raise ParameterError("secrets", secrets, "distinct secret labels")
            self._secrets = tuple(secrets)
            self._pairs = tuple(_canon_pairs(secrets, pairs))
        self._thetas = tuple(thetas)
        self._laws = laws
        self._sprob = sprob
        self._dim = int(dim)
        if not isinstance(name, str):
            raise ParameterTypeError("name", name, "a string")
        self._name = name
        self._digest: str | None = None
        if group_sensitivity is not None:
            group_sensitivity = V.real("group_sensitivity", group_sensitivity, lo=0.0)
        if not isinstance(group_note, str):
            raise ParameterTypeError("group_note", group_note, "a string")
        self._group_sensitivity = group_sensitivity
        self._group_note = group_note

    def __setattr__(self, key: str, value: Any) -> None:
        # Frameworks are immutable: a guarantee computed from one must stay true of it.
        if not key.startswith("_"):
            raise AttributeError(f"Framework is immutable: cannot set {key!r} (pass it to the constructor)")
        object.__setattr__(self, key, value)

    @property
    def name(self) -> str:
        return self._name

    @property
    def group_sensitivity(self) -> float | None:
        """The group-DP sensitivity of the query (the whole correlated group changes), when the
        model knows it: the baseline every gain is measured against."""
        return self._group_sensitivity

    @property
    def group_note(self) -> str:
        return self._group_note

    @classmethod
    def from_conditionals(cls, conditionals: Mapping[Hashable, Mapping[Hashable, DiscreteDist | None]],
                          pairs: Any, *, name: str = "framework",
                          secret_probs: Mapping[tuple[Hashable, Hashable], float] | None = None,
                          group_sensitivity: float | None = None, group_note: str = "") -> Framework:
        """Framework from the laws directly: ``conditionals[theta][secret]`` is a DiscreteDist, or
        ``None`` when P(secret | theta) = 0 (pairs with it are then skipped for that theta).
        ``secret_probs[(theta, secret)]`` optionally gives P(secret | theta) (NaN otherwise)."""
        if not isinstance(conditionals, Mapping) or not conditionals:
            raise ParameterTypeError("conditionals", conditionals, "a non-empty mapping theta -> {secret: DiscreteDist}")
        secrets: list[Hashable] = []
        laws, sprob, dim = {}, {}, None
        for th, per in conditionals.items():
            if not isinstance(per, Mapping):
                raise ParameterTypeError(f"conditionals[{th!r}]", per, "a mapping secret -> DiscreteDist")
            for s, law in per.items():
                if s not in secrets:
                    secrets.append(s)
                if law is None:
                    sprob[(th, s)] = 0.0
                    continue
                if not isinstance(law, DiscreteDist):
                    raise ParameterTypeError(f"conditionals[{th!r}][{s!r}]", law, "a DiscreteDist or None")
                if dim is None:
                    dim = law.dim
                elif law.dim != dim:
                    raise ParameterError(f"conditionals[{th!r}][{s!r}]", f"a law on R^{law.dim}",
                                         f"laws of one dimension (R^{dim})")
                laws[(th, s)] = law
                sprob[(th, s)] = math.nan  # positive but not given
        for key, pr in (secret_probs or {}).items():
            if key not in sprob:
                raise ParameterError("secret_probs", key, "(theta, secret) keys of the conditionals")
            pr = V.real(f"secret_probs[{key!r}]", pr, lo=0.0, hi=1.0)
            if (pr == 0) != (laws.get(key) is None):
                raise ParameterError(f"secret_probs[{key!r}]", pr,
                                     "0 exactly when the conditional law is None")
            sprob[key] = pr
        self = cls.__new__(cls)
        self._setup(secrets, pairs, list(conditionals), laws, sprob, dim or 1, name,
                    group_sensitivity, group_note)
        return self

    @classmethod
    def from_joint_counts(cls, counts: Any, secret_labels: Sequence[Hashable], x_values: Sequence[float],
                          pairs: Any = "all", *, theta: Hashable = "empirical",
                          name: str = "joint counts") -> Framework:
        """Framework whose single prior is the empirical joint law of a (secret, query value)
        contingency table: ``counts[r][c]`` records with secret ``secret_labels[r]`` and query
        value ``x_values[c]``. Masses are exact (count / row total). The encoding of categorical
        query values as numbers (``x_values``) is part of the query (Ding 2022)."""
        rows = [list(r) for r in counts]
        if len(rows) != len(secret_labels):
            raise ParameterError("counts", f"{len(rows)} rows", f"one row per secret ({len(secret_labels)})")
        xs = V.float_array("x_values", x_values, ndim=1)
        per = {}
        for lab, r in zip(secret_labels, rows):
            if len(r) != xs.shape[0]:
                raise ParameterError("counts", f"row {lab!r} of length {len(r)}", f"{xs.shape[0]} columns")
            cs = [V.integer("counts", c, lo=0) for c in r]
            per[lab] = None if sum(cs) == 0 else DiscreteDist.from_counts(xs, cs)
        total = sum(sum(int(c) for c in r) for r in rows)
        if total == 0:
            raise ParameterError("counts", counts, "a table with at least one record")
        sp = {(theta, lab): float(Fraction(sum(int(c) for c in r), total)) for lab, r in zip(secret_labels, rows)}
        return cls.from_conditionals({theta: per}, pairs, name=name, secret_probs=sp)

    # ------------------------------------------------------------------ access
    @property
    def secrets(self) -> Sequence[Hashable]:
        """The secret labels (a tuple; models with many secrets generate them on demand)."""
        return self._secrets

    @property
    def pairs(self) -> Sequence[tuple[Hashable, Hashable]]:
        """The discriminative pairs (a tuple; models with many pairs generate them on demand)."""
        return self._pairs

    @property
    def thetas(self) -> tuple[Hashable, ...]:
        return self._thetas

    @property
    def dim(self) -> int:
        """Output dimension d of the query."""
        return self._dim

    def conditional(self, theta: Hashable, secret: Hashable) -> DiscreteDist | None:
        """mu_secret^theta, or None when P(secret | theta) = 0."""
        if theta not in self._thetas:
            raise ParameterError("theta", theta, f"one of the framework's {len(self._thetas)} priors")
        if secret not in self._secrets:
            raise ParameterError("secret", secret, "one of the framework's secrets")
        return self._laws.get((theta, secret))

    def secret_probability(self, theta: Hashable, secret: Hashable) -> float:
        """P(secret | theta) (NaN when the framework was built from conditionals without it)."""
        self.conditional(theta, secret)  # validates both labels (and computes lazy laws)
        return self._sprob.get((theta, secret), 0.0)

    def pair_laws(self) -> Iterator[tuple[Hashable, tuple[Hashable, Hashable], Any, Any]]:
        """Yields (theta, (s_i, s_j), mu_i, mu_j) for every prior and every pair whose two
        secrets have positive probability under it."""
        for th in self._thetas:
            for a, b in self._pairs:
                P, Q = self._laws.get((th, a)), self._laws.get((th, b))
                if P is not None and Q is not None:
                    yield th, (a, b), P, Q

    @property
    def skipped(self) -> list[tuple[Hashable, tuple[Hashable, Hashable], str]]:
        """(theta, pair, reason) for every (prior, pair) left out because a secret has zero
        probability under that prior."""
        out = []
        for th in self._thetas:
            for a, b in self._pairs:
                missing = [s for s in (a, b) if (th, s) not in self._laws]
                if missing:
                    out.append((th, (a, b), f"P({missing[0]!r} | theta) = 0"))
        return out

    def n_evaluations(self) -> int:
        return sum(1 for _ in self.pair_laws())

    # ------------------------------------------------------------------ sensitivities
    def _require_pairs(self) -> None:
        if self.n_evaluations() == 0:
            raise ParameterError("framework", self.name,
                                 "at least one (prior, pair) whose secrets both have positive probability")

    def w_inf(self, norm: float | None = None, *, threads: int = 0) -> Sensitivity:
        """Delta_G = max over priors and pairs of W_inf(mu_i, mu_j) (Pierquin et al. 2024, Thm 3.3; Song et
        al.'s Wasserstein mechanism). ``norm`` (1, 2 or inf) is needed when d > 1."""
        from . import transport

        if self._dim == 1 and norm is not None:
            # on R every norm is |x - y|: accepting and ignoring one would hide a mistake
            raise ParameterError("norm", norm, "None for a 1-D query (norms apply to R^d, d > 1)")
        self._require_pairs()
        recs = list(self.pair_laws())
        vals: Any
        if self._dim == 1:
            vals = transport.w_inf_many([(P, Q) for _, _, P, Q in recs], threads=threads)
        else:
            if norm is None:
                raise ParameterError("norm", norm, "1, 2 or inf for a query with d > 1")
            vals = [transport.w_inf(P, Q, norm=norm) for _, _, P, Q in recs]
        return self._collect("w_inf", recs, vals, norm)

    def cost(self, *, threads: int = 0) -> Cost:
        """Estimated cost of :meth:`w_inf` (one pass over the atoms of both laws of every
        (prior, pair)); nothing is computed.

        >>> fw = Framework.from_conditionals({"t": {"a": DiscreteDist([0, 1], [0.5, 0.5]),
        ...                                         "b": DiscreteDist([0, 2], [0.5, 0.5])}}, "all")
        >>> fw.cost().operations
        4.0
        """
        import os

        ops = float(sum(len(P.atoms) + len(Q.atoms) for _, _, P, Q in self.pair_laws()))
        thr = V.threads(threads) or (os.cpu_count() or 1)
        return Cost(ops, 8.0 * ops, ops / _W_INF_ATOMS_PER_SECOND / thr)

    def w_p(self, p: float) -> Sensitivity:
        """max over priors and pairs of W_p (1-D; Pierquin et al. 2024, Cor 4.1's W_p sensitivity)."""
        from . import transport

        self._require_pairs()
        recs = list(self.pair_laws())
        vals = [transport.w_p(P, Q, p) for _, _, P, Q in recs]
        return self._collect("w_p", recs, vals, None, {"p": p})

    def near_radius(self, delta: float) -> Sensitivity:
        """Delta_{G,delta} = max over priors and pairs of the (z, delta)-nearness radius
        (Pierquin et al. 2024, Thm 4.3), by the exact greedy of Pierquin et al. 2024."""
        from . import transport

        delta = V.delta_open("delta", delta)
        self._require_pairs()
        recs = list(self.pair_laws())
        vals = [transport.near_radius(P, Q, delta) for _, _, P, Q in recs]
        return self._collect("near_radius", recs, vals, None, {"delta": delta})

    def support_diameter(self) -> Sensitivity:
        """The DP-style baseline of Ding 2022 eq. (9): max over priors and pairs of the largest
        distance between a point of supp mu_i and a point of supp mu_j (1-D)."""
        self._require_pairs()
        recs = list(self.pair_laws())
        vals = []
        for _, _, P, Q in recs:
            if self._dim != 1:
                raise ParameterError("framework", f"query on R^{self._dim}", "a 1-D query for the support diameter")
            vals.append(float(max(P.atoms[-1] - Q.atoms[0], Q.atoms[-1] - P.atoms[0])))
        return self._collect("support_diameter", recs, vals, None)

    @property
    def query_range(self) -> tuple[float, float]:
        """(lo, hi): the smallest and largest value of the (1-D) query over the support of every
        conditional law, i.e. every value the query takes with positive probability under a prior
        given a secret. Clamping a noisy release to it is post-processing (``clamp=True`` of
        :meth:`Mechanism.release <puffer.mechanisms.Mechanism.release>`).

        A property, like :attr:`state_values <puffer.models.MarkovChainFramework.state_values>`
        (it was a method up to puffer 0.2.0: write ``fw.query_range``, not ``fw.query_range()``; the
        tuple it returns is not callable).

        >>> from puffer import models
        >>> models.correlated_pair().query_range
        (0.0, 2.0)
        """
        self._require_1d("query_range")
        self._require_pairs()
        atoms = [L.atoms for _, _, P, Q in self.pair_laws() for L in (P, Q)]
        return float(min(a.min() for a in atoms)), float(max(a.max() for a in atoms))

    def query_lattice(self) -> tuple[float, float] | None:
        """(step, offset) when every value of the (1-D) query is an integer on offset + step Z
        (step: the gcd of the differences of the support points), else None. Rounding a noisy
        release to it is post-processing (``lattice=True`` of ``release``).

        >>> from puffer import models
        >>> models.correlated_pair().query_lattice()
        (1.0, 0.0)
        """
        self._require_1d("query_lattice")
        self._require_pairs()
        pts = np.unique(np.concatenate([L.atoms for _, _, P, Q in self.pair_laws() for L in (P, Q)]))
        return _integer_lattice(pts)

    def _require_1d(self, what: str) -> None:
        if self._dim != 1:
            raise ParameterError("framework", f"query on R^{self._dim}", f"a 1-D query for {what} "
                                 "(give a range for a vector query)")

    @staticmethod
    def _collect(kind: str, recs: list[tuple[Hashable, tuple[Hashable, Hashable], Any, Any]], vals: Iterable[float],
                 norm: float | None, params: dict[str, Any] | None = None) -> Sensitivity:
        vals = [float(v) for v in vals]
        k = int(np.argmax(vals))
        records = tuple(PairRecord(th, pr, v) for (th, pr, _, _), v in zip(recs, vals))
        return Sensitivity(vals[k], kind, (recs[k][0], recs[k][1]), norm, records, params or {})

    # ------------------------------------------------------------------ identity
    def digest(self) -> str:
        """sha256 of the framework's pairs and conditional laws (for guarantee provenance)."""
        if self._digest is None:
            h = hashlib.sha256()
            h.update(json.dumps([_jsonable(p) for p in self._pairs]).encode())
            for (th, s) in sorted(self._laws, key=repr):
                law = self._laws[(th, s)]
                h.update(repr((th, s)).encode())
                h.update(law.atoms.tobytes())
                h.update(law.probs.tobytes())
            self._digest = "sha256:" + h.hexdigest()[:32]
        return self._digest

    def __repr__(self) -> str:
        return (f"Framework({self.name!r}: {len(self._secrets)} secrets, {len(self._pairs)} pairs, "
                f"{len(self._thetas)} priors, query on R^{self._dim}, {len(self.skipped)} skipped)")
