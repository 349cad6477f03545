"""The series plan: :func:`plan` and :class:`SeriesPlan` (see :mod:`puffer.series`)."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from typing import Any

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..framework import Sensitivity
from ..guarantees import PP, Provenance
from ..mechanisms._base import Mechanism
from ..refs import Ref
from ._candidate import Candidate
from ._windows import check_windows

__all__ = ["SeriesPlan", "SeriesWindow", "plan", "THEOREMS"]

#: the theorems :func:`plan` can use (``theorem=``); "best" takes the least noise among them
THEOREMS = ("mqm", "quilt")
_FORMAT = "puffer.series.plan/1"




class SeriesWindow(Mechanism):
    """The release of one window of a :class:`SeriesPlan`: the window's sum plus Laplace noise of
    the plan's scale for that window. ``guarantee`` is the plan's: the certified guarantee of
    **all** windows of the series together (published in any order), not of this window alone.
    The window's release goes through the existing release paths (``release``, ``secure=True``
    lattice releases, the publishing engines).

    The lattice padding (:meth:`lattice_sensitivity`, the plan's ``lattice_sensitivity``): a
    lattice release snaps the window's sum to g Z and adds rounded Laplace noise of the scale
    inflated by (Delta + g) / Delta. For the MQM plans Delta = L, the state values' span (as
    :class:`~puffer.mechanisms.MarkovQuilt`). For the quilt plans (docs page "series", Lemma 3)
    snapping moves each window that meets a quilt's nearby part by at most g / 2, which costs at
    most g / b' <= Delta / b per such window, and a larger scale never costs more (Laplace(b') is
    Laplace(b) plus independent noise); the plan is calibrated with a slack eps - eps_certified >=
    1e-4 eps and Delta = slack * b / m, m the most windows any binding quilt meets.
    """

    guarantee: PP
    theorem = "a planned series (puffer.series): see the plan's theorem"

    def __init__(self, plan: SeriesPlan, k: int):
        from ..noise import Laplace

        self.plan = plan
        self.window = k
        self.framework = None
        self.refs = plan.refs
        self.theorem = plan.theorem_summary
        scale = float(plan.scales[k])
        self.noise = Laplace(scale)
        self.eps = plan.guarantee.eps
        self.delta = 0.0
        start, stop = plan.windows[k]
        self.sensitivity = Sensitivity(plan.eps_target * scale, "series", None,
                                       params={"window": k, "positions": [start, stop], "plan": plan.digest()})
        self.guarantee = PP(plan.guarantee.eps, 0.0, Provenance(
            mechanism="SeriesWindow", theorem=self.theorem, sensitivity=None, witness=plan.binding_secret,
            noise=self.noise.describe(), framework=plan.framework_digest,
            notes=f"window {k} = positions [{start}, {stop}) of a planned series of {len(plan.windows)} windows; "
                  f"the guarantee covers all windows together (plan {plan.digest()})", refs=plan.refs))
        self.group = None

    def lattice_sensitivity(self) -> float:
        return float(self.plan.lattice_sensitivity)

    def __repr__(self) -> str:
        return f"SeriesWindow(window={self.window}, noise={self.noise!r}, guarantee={self.guarantee!r})"


class SeriesPlan:
    """A calibrated series of window releases on one chain (immutable; see :mod:`puffer.series`).

    ``windows``: the (start, stop) position ranges; ``scales``: the Laplace noise scale of each
    window's release (a read-only array, query units); ``guarantee``: the certified
    :class:`~puffer.PP` guarantee of all windows together; ``theorem``: the
    :class:`~puffer.refs.Ref` s of the theorem used (``theorem_name``: its short name);
    ``binding_secret``: where the bound binds (prior, position, secret pair, quilt);
    ``framework_digest`` / ``framework_name``: the framework planned on.
    """

    __slots__ = ("_windows", "_scales", "_eps", "_eps_certified", "_guarantee", "_name", "_refs", "_summary",
                 "_binding", "_fw_digest", "_fw_name", "_T", "_lattice", "_candidates", "_digest")

    def __init__(self, *, windows: Any, scales: Any, eps: float, eps_certified: float, theorem: str,
                 refs: tuple[Ref, ...], summary: str, binding: dict[str, Any], framework_digest: str,
                 framework_name: str, T: int, lattice_sensitivity: float, candidates: dict[str, float]):
        T = V.integer("T", T, lo=1)
        ws = check_windows(windows, T)
        sc = np.array(scales, dtype=np.float64).reshape(-1)
        if sc.shape != (len(ws),) or not np.isfinite(sc).all() or (sc <= 0).any():
            raise ParameterError("scales", scales, f"{len(ws)} finite noise scales > 0 (one per window)")
        sc.setflags(write=False)
        eps = V.positive("eps", eps)
        eps_c = V.nonneg("eps_certified", eps_certified)
        if eps_c > eps:
            raise ParameterError("eps_certified", eps_c, f"a certified eps <= the plan's eps {eps!r}")
        if theorem not in THEOREMS:
            raise ParameterError("theorem", theorem, f"one of {THEOREMS}")
        if not isinstance(binding, dict):
            raise ParameterTypeError("binding", binding, "a dict")
        for name, s in (("framework_digest", framework_digest), ("framework_name", framework_name),
                        ("summary", summary)):
            if not isinstance(s, str):
                raise ParameterTypeError(name, s, "a string")
        refs = tuple(refs)
        if not refs or not all(isinstance(r, Ref) for r in refs):
            raise ParameterTypeError("refs", refs, "a non-empty tuple of puffer.refs.Ref")
        lattice_sensitivity = V.positive("lattice_sensitivity", lattice_sensitivity)
        if theorem == "quilt" and not lattice_sensitivity <= (eps - eps_c) * float(sc.min()):
            # Lemma 3 (b): Delta = (eps - eps_certified) b / m with m >= 1 windows
            raise ParameterError("lattice_sensitivity", lattice_sensitivity, "the padding of a quilt plan, at most "
                                 f"(eps - eps_certified) * scale = {(eps - eps_c) * float(sc.min())!r} (Lemma 3)")
        if not isinstance(candidates, dict) or not all(k in THEOREMS for k in candidates):
            raise ParameterError("candidates", candidates, f"a dict theorem -> scale over {THEOREMS}")
        self._windows = ws
        self._scales = sc
        self._eps = eps
        self._eps_certified = eps_c
        self._name = theorem
        self._refs = refs
        self._summary = summary
        self._binding = json.loads(json.dumps(binding))
        self._fw_digest = framework_digest
        self._fw_name = framework_name
        self._T = T
        self._lattice = lattice_sensitivity
        self._candidates = {k: float(v) for k, v in candidates.items()}
        self._guarantee = PP(eps, 0.0, Provenance(
            mechanism="SeriesPlan", theorem=summary, witness=self._binding,
            noise={"family": "laplace", "scales": sc.tolist(), "lattice_sensitivity": lattice_sensitivity},
            framework=framework_digest, refs=refs,
            notes=f"{len(ws)} windows on a horizon of T = {T}: the guarantee of all windows together, "
                  f"in any order of publication (certified eps of the series {eps_c!r} <= {eps!r})"))
        self._digest: str | None = None     # last: the object is frozen from here on

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_digest") and name != "_digest":
            raise AttributeError(f"SeriesPlan is immutable (cannot set {name!r})")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ views
    @property
    def windows(self) -> tuple[tuple[int, int], ...]:
        """The windows, half-open (start, stop) position ranges on the horizon."""
        return self._windows

    @property
    def scales(self) -> np.ndarray:
        """The Laplace noise scale of each window's release (read-only, query units)."""
        return self._scales

    @property
    def guarantee(self) -> PP:
        """The certified guarantee of all windows together."""
        return self._guarantee

    @property
    def eps_target(self) -> float:
        return self._eps

    @property
    def eps_certified(self) -> float:
        """The theorem's certified eps of the whole series at these scales (<= guarantee.eps)."""
        return self._eps_certified

    @property
    def theorem(self) -> tuple[Ref, ...]:
        """The results the plan's guarantee rests on."""
        return self._refs

    @property
    def refs(self) -> tuple[Ref, ...]:
        return self._refs

    @property
    def theorem_name(self) -> str:
        """'mqm' or 'quilt' (see :data:`THEOREMS`)."""
        return self._name

    @property
    def theorem_summary(self) -> str:
        return self._summary

    @property
    def binding_secret(self) -> dict[str, Any]:
        """Where the bound binds: prior, position t, secret pair, quilt (a copy)."""
        out: dict[str, Any] = json.loads(json.dumps(self._binding))
        return out

    @property
    def candidates(self) -> dict[str, float]:
        """The common scale each theorem tried needs (the plan uses the least)."""
        return dict(self._candidates)

    @property
    def framework(self) -> dict[str, Any]:
        """The framework planned on: ``{"digest", "name", "T"}`` (the plan holds no framework
        object: it is rebuilt from JSON anywhere)."""
        return {"digest": self._fw_digest, "name": self._fw_name, "T": self._T}

    @property
    def framework_digest(self) -> str:
        return self._fw_digest

    @property
    def framework_name(self) -> str:
        return self._fw_name

    @property
    def horizon(self) -> int:
        """T, the number of positions of the chain."""
        return self._T

    @property
    def lattice_sensitivity(self) -> float:
        """Delta of the lattice padding of every window's release (see :class:`SeriesWindow`)."""
        return self._lattice

    # ------------------------------------------------------------------ re-check
    def verify(self, fw: Any, *, progress: Any = None) -> dict[str, Any]:
        """Re-derive the plan's bound from the framework it was planned on, for a plan read from
        a file (:meth:`from_json` checks that the fields agree, not that the scales hold): the
        certified eps of all windows at the plan's least scale b, with the lattice padding
        ``lattice_sensitivity`` (quilt plans: :func:`puffer.series.series_epsilon` with Lemma 3
        (b); MQM plans: b at least the MQM's scale and the padding at most its own), refused
        unless it is at most the plan's eps. As costly as a part of the planning (``progress``:
        :mod:`puffer._progress`). Returns ``{"plan_digest", "theorem", "eps", "scale",
        "lattice_sensitivity"}`` (``eps``: the re-derived certified eps).

        >>> import puffer
        >>> fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=8)
        >>> p = SeriesPlan.from_json(puffer.series.plan(fw, 4, eps=1.0).to_json())
        >>> v = p.verify(fw)
        >>> v["eps"] <= p.guarantee.eps, v["plan_digest"] == p.digest()
        (True, True)
        """
        from ..models import MarkovChainFramework
        from . import quilt as Q

        if not isinstance(fw, MarkovChainFramework):
            raise ParameterTypeError("fw", fw, "the framework the plan was made on (puffer.models.markov_chain)")
        if fw.digest() != self._fw_digest or int(fw.length) != self._T:
            raise ParameterError("fw", fw.name, f"the framework the plan was made on (digest {self._fw_digest}, "
                                 f"T = {self._T}); this one has digest {fw.digest()}, T = {int(fw.length)}")
        b = float(self._scales.min())      # a larger scale never costs more (Lemma 3 (a))
        lat = self._lattice
        if self._name == "quilt":
            got = Q.series_epsilon(fw, self._windows, b, progress=progress, lattice_sensitivity=lat,
                                   label="series plan check")
            ok = got <= self._eps
            why = (f"the certified eps of its windows at scale {b!r} with lattice padding {lat!r}, re-derived from "
                   f"the framework (Thm 1, Lemma 3), is {got!r}")
        else:
            c = Q.mqm_candidate(fw, self._windows, self._eps)
            got = c.eps
            ok = b >= c.scale and lat <= c.lattice
            why = (f"the MQM needs a scale of at least {c.scale!r} (the plan has {b!r}) and a lattice padding of at "
                   f"most {c.lattice!r} (the plan has {lat!r})")
        if not ok:
            raise ParameterError("plan", self.digest(), f"a plan whose scales certify its eps = {self._eps!r}: {why} "
                                 "(the plan was edited, or made by another theorem or puffer version)")
        return {"plan_digest": self.digest(), "theorem": self._name, "eps": float(got), "scale": b,
                "lattice_sensitivity": lat}

    # ------------------------------------------------------------------ releases
    def _k(self, k: Any) -> int:
        return V.integer("window", k, lo=0, hi=len(self._windows) - 1)

    def mechanism(self, k: int) -> SeriesWindow:
        """The calibrated mechanism of window ``k`` (Laplace noise of scale ``scales[k]``), for
        the existing release paths; its guarantee is the plan's (all windows together)."""
        return SeriesWindow(self, self._k(k))

    def release(self, k: int, value: Any, *, rng: Any = None) -> Any:
        """Window ``k``'s true value (its sum) plus its calibrated noise, in memory (``rng`` as in
        :meth:`puffer.mechanisms.Mechanism.release`: for experiments; publish with a key)."""
        return self.mechanism(k).release(value, rng=rng)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "framework": {"digest": self._fw_digest, "name": self._fw_name, "T": self._T},
            "windows": [list(w) for w in self._windows],
            "scales": [float(x) for x in self._scales],
            "eps": self._eps,
            "eps_certified": self._eps_certified,
            "theorem": {"name": self._name, "summary": self._summary, "refs": [r.to_dict() for r in self._refs]},
            "binding": self._binding,
            "lattice_sensitivity": self._lattice,
            "candidates": dict(self._candidates),
            "guarantee": self._guarantee.to_dict(),
        }

    def to_json(self) -> str:
        """The canonical JSON of the plan (sorted keys, no spaces): :meth:`from_json` reads it back
        exactly and :meth:`digest` hashes it."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_dict(cls, d: Any) -> SeriesPlan:
        if not isinstance(d, dict):
            raise ParameterTypeError("plan", d, "a dict made by SeriesPlan.to_dict()")
        keys = {"format", "framework", "windows", "scales", "eps", "eps_certified", "theorem", "binding",
                "lattice_sensitivity", "candidates", "guarantee"}
        for k in d:
            if k not in keys:
                raise ParameterError(f"plan.{k}", d[k], f"a key of a series plan ({', '.join(sorted(keys))})")
        for k in keys:
            if k not in d:
                raise ParameterError(f"plan.{k}", "<missing>", f"the key {k!r} of a series plan")
        if d["format"] != _FORMAT:
            raise ParameterError("plan.format", d["format"], repr(_FORMAT))
        fw, th = d["framework"], d["theorem"]
        if not isinstance(fw, dict) or set(fw) != {"digest", "name", "T"}:
            raise ParameterError("plan.framework", fw, "a dict with keys digest, name, T")
        if not isinstance(th, dict) or set(th) != {"name", "summary", "refs"}:
            raise ParameterError("plan.theorem", th, "a dict with keys name, summary, refs")
        if not isinstance(th["refs"], list):
            raise ParameterTypeError("plan.theorem.refs", th["refs"], "a list of references")
        for name in ("scales", "windows"):
            if not isinstance(d[name], list):
                raise ParameterTypeError(f"plan.{name}", d[name], "a list")
        for i, x in enumerate(d["scales"]):
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise ParameterTypeError(f"plan.scales[{i}]", x, "a number")
        for name in ("eps", "eps_certified", "lattice_sensitivity"):
            if isinstance(d[name], bool) or not isinstance(d[name], (int, float)):
                raise ParameterTypeError(f"plan.{name}", d[name], "a number")
        if not isinstance(d["candidates"], dict):
            raise ParameterTypeError("plan.candidates", d["candidates"], "a dict theorem -> scale")
        out = cls(windows=[tuple(w) if isinstance(w, list) else w for w in d["windows"]], scales=d["scales"],
                  eps=d["eps"], eps_certified=d["eps_certified"], theorem=th["name"],
                  refs=tuple(Ref.from_dict(r) for r in th["refs"]), summary=th["summary"], binding=d["binding"],
                  framework_digest=fw["digest"], framework_name=fw["name"], T=fw["T"],
                  lattice_sensitivity=d["lattice_sensitivity"],
                  candidates=d["candidates"])
        g = PP.from_dict(d["guarantee"])
        if g != out.guarantee or g.provenance != out.guarantee.provenance:
            raise ParameterError("plan.guarantee", d["guarantee"], "the guarantee the plan's fields give "
                                 f"({out.guarantee!r} with its provenance)")
        return out

    @classmethod
    def from_json(cls, text: Any) -> SeriesPlan:
        """Read a plan written by :meth:`to_json` (strict: unknown keys, missing keys and wrong
        kinds are refused)."""
        if not isinstance(text, (str, bytes, bytearray)):
            raise ParameterTypeError("text", text, "the JSON text of a series plan")
        try:
            d = json.loads(text)
        except ValueError as exc:
            raise ParameterError("text", str(text)[:60], f"valid JSON ({exc})") from None
        return cls.from_dict(d)

    def digest(self) -> str:
        """SHA-256 of the canonical JSON (:meth:`to_json`), as ``"sha256:<hex>"``."""
        if self._digest is None:
            object.__setattr__(self, "_digest", "sha256:" + hashlib.sha256(self.to_json().encode()).hexdigest())
        assert self._digest is not None
        return self._digest

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SeriesPlan):
            return NotImplemented
        return self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        sc = self._scales
        s = f"{sc[0]:.6g}" if (sc == sc[0]).all() else f"{sc.min():.6g}..{sc.max():.6g}"
        return (f"SeriesPlan({len(self._windows)} windows on T={self._T}, scale {s}, "
                f"eps={self._eps:g} (certified {self._eps_certified:.6g}), theorem={self._name})")


def plan(fw: Any, windows: Any, eps: float, delta: float = 0.0, *, theorem: str = "best",
         progress: Any = None) -> SeriesPlan:
    """Plan a series of window releases on one chain: the least common Laplace scale a theorem
    allows for the whole series at ``eps`` (see :mod:`puffer.series`).

    Parameters
    ----------
    fw : MarkovChainFramework
        A framework from :func:`puffer.models.markov_chain` whose chain covers the horizon
        (homogeneous, periodic or with a matrix per step; Theta = its priors, max over them).
    windows : sequence of (start, stop) or int
        Half-open position ranges on the horizon 0 .. T - 1, sorted and disjoint; an int LEN:
        consecutive windows of LEN positions covering the horizon. Window k's query is the sum
        of the state values over its positions.
    eps : float
        The target eps of the whole series (all windows together).
    delta : float
        0 (the series theorems are pure eps-Pufferfish; a delta > 0 is refused, not ignored).
    theorem : str
        ``"best"`` (the least noise among :data:`THEOREMS`), ``"mqm"`` or ``"quilt"``.
    progress : None, bool or callable
        As elsewhere in puffer (:mod:`puffer._progress`).
    """
    from ..models import MarkovChainFramework
    from . import quilt as Q

    if not isinstance(fw, MarkovChainFramework):
        raise ParameterTypeError("fw", fw, "a framework from puffer.models.markov_chain")
    eps = V.positive("eps", eps)
    delta = V.delta("delta", delta)
    if delta != 0.0:
        raise ParameterError("delta", delta, "0.0 (the series theorems give pure eps-Pufferfish guarantees)")
    if not isinstance(theorem, str) or theorem not in ("best",) + THEOREMS:
        raise ParameterError("theorem", theorem, f"'best' or one of {THEOREMS}")
    ws = check_windows(windows, fw.length)
    names = THEOREMS if theorem == "best" else (theorem,)
    cands: list[Candidate] = []
    skipped = ""
    if theorem == "best":
        # the quilted bound's laws live on the values' grid: too fine a grid is known before any
        # work; the MQM needs no grid (the plan's theorem says the quilt was not evaluated)
        why = Q.grid_problem(fw, Q._cap(fw, None), ws)
        if why is not None:
            names = ("mqm",)
            skipped = (f"; the quilted bound was not evaluated: {why} (state values on a common step, e.g. rounded "
                       "to 0.01, allow it)")
    for name in names:
        if name == "mqm":
            c = Q.mqm_candidate(fw, ws, eps)
            cands.append(replace(c, summary=c.summary + skipped) if skipped else c)
        else:
            cands.append(Q.quilt_candidate(fw, ws, eps, progress=progress))
    best = min(cands, key=lambda c: (c.scale, THEOREMS.index(c.name)))
    if not best.eps <= eps or not math.isfinite(best.scale):
        raise ParameterError("eps", eps, "a target the theorems can certify")   # pragma: no cover
    return SeriesPlan(windows=ws, scales=[best.scale] * len(ws), eps=eps, eps_certified=best.eps,
                      theorem=best.name, refs=best.refs, summary=best.summary, binding=best.binding,
                      framework_digest=fw.digest(), framework_name=fw.name, T=fw.length,
                      lattice_sensitivity=best.lattice, candidates={c.name: c.scale for c in cands})
