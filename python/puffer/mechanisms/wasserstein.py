"""Wasserstein-type mechanisms: additive noise calibrated to a transport sensitivity.

Pierquin, Bellet, Tommasi, Boussard 2024 (Pierquin et al. 2024): the noise is calibrated to a
transport distance between the conditional query laws of the secret pairs.

* :class:`Wasserstein` — Song, Wang, Chaudhuri (2017): Laplace noise b = Delta_G / eps gives
  eps-PP, Delta_G = max W_inf (Pierquin et al. 2024, Cor 3.1, Laplace PP row).
* :class:`GeneralWasserstein` — Thm 3.3 / Cor 3.1: any noise zeta; (alpha, R_alpha(zeta, Delta_G))-RPP
  for every alpha > 1, with Delta_G in the noise's natural norm (l2 Gaussian, l1 Laplace, Lemma B.1).
* :class:`ApproximateWasserstein` — Thm 4.3: with the (z, delta)-near radius Delta_{G,delta},
  (alpha, R_alpha(zeta, Delta_{G,delta}) + alpha/(alpha-1) log(1/(1-delta)), delta)-approximate RPP.
* :class:`DistributionAwareWasserstein` — Thm 4.5: (alpha, log(Delta_G^{zeta,q,alpha}) / (q(alpha-1)))-RPP
  with the exponential-moment transport cost evaluated on the quantile coupling. Any coupling
  upper-bounds the infimum in Delta_G^{zeta,q,alpha}, so this is sound for every noise; it is exact
  when the cost is convex (Gaussian, Laplace, Cauchy; Pierquin et al. 2024).

Every epsilon reported is the noise family's certified upper bound, rounded upward; every
calibrated scale is rounded upward.
"""
from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError, UnboundedSensitivityError
from ..framework import Framework
from ..guarantees import PP, ApproxRPP, RPPCurve, default_orders, round_up
from ..refs import Ref
from ._base import Mechanism, scale_up

if TYPE_CHECKING:
    from ..framework import Sensitivity

    # families.Laplace in annotations: puffer.capacity.restricted has a Laplace too
    from ..noise import IID, NoiseFamily, families

__all__ = ["Wasserstein", "GeneralWasserstein", "ApproximateWasserstein", "DistributionAwareWasserstein"]


def _finite(sens: Sensitivity, what: str = "Delta_G") -> Sensitivity:
    if not math.isfinite(sens.value):
        raise UnboundedSensitivityError(f"{what} is infinite (attained at {sens.witness})", sens.witness)
    return sens


class Wasserstein(Mechanism):
    """Song et al.'s Wasserstein mechanism: Laplace(b) per coordinate with b = Delta_G / eps
    (Delta_G in l1 when the query is vector-valued) gives eps-PP.

    Parameters
    ----------
    framework : Framework
        The Pufferfish framework: secrets, secret pairs, the priors Theta and the
        conditional query laws the sensitivity is computed from.
    eps : float
        The target eps > 0 of eps-PP.

    Examples
    --------
    >>> import puffer
    >>> m = puffer.mechanisms.Wasserstein(puffer.models.correlated_pair(), eps=1.0)
    >>> m.sensitivity.value, m.guarantee
    (2.0, PP(eps=1.0, delta=0.0))
    >>> m.noise.scale   # Delta_G / eps = 2, rounded upward by a few ulps (more noise is safe)
    2.0000000000000018
    """
    guarantee: PP   # narrows Mechanism.guarantee
    #: Laplace(Delta_G / eps, rounded upward); None at sensitivity 0 (no noise needed)
    noise: families.Laplace | None

    theorem = "Song et al. 2017, Wasserstein mechanism; Pierquin et al. 2024, Cor 3.1 (Laplace, PP)"
    refs = (Ref("song2017", "Wasserstein mechanism (Thm 3.2)"), Ref("pierquin2024", "Cor 3.1"))

    def __init__(self, framework: Framework, eps: float):
        from ..noise import Laplace

        self.framework = self._check_framework(framework)
        eps = V.positive("eps", eps)
        self.sensitivity = _finite(framework.w_inf(norm=1 if framework.dim > 1 else None))
        delta_g = self.sensitivity.value
        b = scale_up(delta_g / eps)
        self.noise = Laplace(b) if delta_g > 0 else None
        self.eps = eps
        self.guarantee = PP(eps, 0.0, self._provenance("zero sensitivity: no noise needed" if delta_g == 0 else ""))
        self.group = self._group(b, lambda g: scale_up(g / eps))

    def lattice_sensitivity(self) -> float:
        """Delta_G: snapping moves W_inf by at most c g and eps = Delta_G / b (see the base class)."""
        return float(self.sensitivity.value)


class GeneralWasserstein(Mechanism):
    """The General Wasserstein Mechanism (Pierquin et al. 2024, Thm 3.3, Cor 3.1).

    Give either a noise with its scale (``GeneralWasserstein(fw, Gaussian(5.0))``: the guarantee
    this scale gives, ``.to_pp(delta)`` for (eps, delta)-PP), or a noise family to calibrate with a
    target: ``alpha=`` and ``eps=`` (smallest scale whose certified R_alpha(zeta, Delta_G) <= eps)
    or ``eps=`` and ``delta=`` (an (eps, delta)-PP target). A family is a class (``Gaussian``), a name
    (``"gaussian"``) or a unit instance carrying shape parameters (``GenGaussian(1.5, 1.0)``); an
    instance with another scale is refused with a target (the target would silently replace its scale).

    The guarantee is an :class:`~puffer.RPPCurve` valid at every order, built from the family's
    certified epsilon(alpha); for an (eps, delta) target it is ``PP(eps, delta)``, calibrated from
    the noise's privacy profile where it can be certified (:mod:`puffer.noise.profile`: the W_inf
    coupling of Song et al. 2017 carries the noise's exact (eps, delta) at Delta_G over to
    (eps, delta)-PP; for the Gaussian the analytic Gaussian mechanism of Balle & Wang 2018, Thm 8),
    else through the Rényi curve and the RPP -> PP conversion, and the Rényi curve of the calibrated
    noise is kept as ``rpp_curve``. ``route`` says which ("profile", "rpp" or None).

    Parameters
    ----------
    framework : Framework
        The Pufferfish framework: secrets, secret pairs, the priors Theta and the conditional
        query laws Delta_G is computed from (in the noise's natural norm for a d-dimensional query).
    noise : NoiseFamily, family class or name
        A noise with its scale (the guarantee is computed), or a family to calibrate
        (``Gaussian``, ``"gaussian"``, a unit instance with shape parameters) with a target.
    alpha : float, optional
        With ``eps``: the Rényi order of an (alpha, eps)-RPP target.
    eps : float, optional
        The target eps: at order ``alpha``, or of (eps, delta)-PP with ``delta``.
    delta : float, optional
        With ``eps``: the delta of an (eps, delta)-PP target (through the RPP -> PP conversion).

    Examples
    --------
    >>> import puffer
    >>> from puffer.noise import Gaussian
    >>> m = puffer.mechanisms.GeneralWasserstein(puffer.models.correlated_pair(), Gaussian,
    ...                                          alpha=2.0, eps=1.0)
    >>> round(m.noise.scale, 9)    # sigma^2 = alpha Delta^2 / (2 eps) = 4
    2.0
    >>> given = puffer.mechanisms.GeneralWasserstein(puffer.models.correlated_pair(), Gaussian(5.0))
    >>> given.noise.scale, round(given.guarantee.at(2.0).eps, 6)   # given sigma: alpha Delta^2 / (2 sigma^2)
    (5.0, 0.16)
    """
    guarantee: RPPCurve | PP   # narrows Mechanism.guarantee: PP for an (eps, delta) target
    #: the noise with its (calibrated) scale; IID for a d-dimensional query; None at sensitivity 0
    noise: NoiseFamily | IID | None
    #: the Rényi curve of the noise at Delta_G (valid at every order)
    rpp_curve: RPPCurve
    #: how an (eps, delta) target was met, "profile" or "rpp" (None without such a target)
    route: str | None

    theorem = "Pierquin et al. 2024, Thm 3.3 / Cor 3.1 (General Wasserstein Mechanism)"
    refs: tuple[Ref, ...] = (Ref("pierquin2024", "Thm 3.3"), Ref("pierquin2024", "Cor 3.1"))

    def __init__(self, framework: Framework, noise: Any, *, alpha: float | None = None,
                 eps: float | None = None, delta: float | None = None):
        from ..noise import NoiseFamily, as_noise

        self.framework = self._check_framework(framework)
        noise = as_noise(noise, calibrating=True) if eps is not None else noise
        if not isinstance(noise, NoiseFamily):
            raise ParameterTypeError("noise", noise, "a puffer.noise instance with its scale "
                                     "(or a family class / name together with a target eps=)")
        d = framework.dim
        norm = noise.natural_norm if d > 1 else None
        self.sensitivity = _finite(framework.w_inf(norm=norm))
        # distances come correctly rounded, not upward: step up before they enter a divergence
        delta_g = round_up(self.sensitivity.value, 2)
        self._delta = delta_g
        given: NoiseFamily | IID = noise if d == 1 else noise.iid(d)
        fam: NoiseFamily | IID | None = given
        self.route = None
        if eps is not None:
            if alpha is not None and delta is not None:
                raise ParameterError("delta", delta, "either alpha (RPP target) or delta (PP target), not both")
            if delta_g == 0:
                fam = None
            elif alpha is not None:
                fam = given.calibrate(alpha=alpha, eps=eps, sensitivity=delta_g)
            elif delta is not None:
                from ..noise.profile import calibrate_eps_delta
                fam, self.route = calibrate_eps_delta(given, eps=eps, delta=delta, sensitivity=delta_g)
            else:
                raise ParameterError("alpha", None, "alpha (with eps) or delta (with eps) for a calibration target")
        elif alpha is not None or delta is not None:
            raise ParameterError("eps", None, "eps together with alpha or delta")
        self.noise = fam
        if self.route == "profile":
            from ..noise.profile import REFS
            self.refs = type(self).refs + REFS
        elif self.route == "rpp":
            self.refs = type(self).refs + (Ref("canonne2020", "Prop 12"),)
        prov = self._provenance("zero sensitivity: no noise needed" if fam is None else "")
        if fam is None:
            self.rpp_curve = RPPCurve(tuple(default_orders()), (0.0,) * 156, prov, lambda a: 0.0)
        else:
            # the family's curve: its certified eps(alpha), with extra large orders and alpha = inf
            # when R_inf is finite (so to_pp can reach pure PP for Laplace)
            c = fam.rpp_curve(delta_g)
            self.rpp_curve = RPPCurve(c.alphas, c.eps, prov, c.fn)
        self.guarantee = self.rpp_curve
        if eps is not None and delta is not None:
            note = {"profile": "(eps, delta) from the noise's privacy profile at Delta_G (certified: closed form "
                               "or quadrature with its error bound), carried to PP by the W_inf coupling",
                    "rpp": "(eps, delta) from the Renyi curve (Canonne et al. 2020, Prop 12, optimised over alpha)",
                    None: "zero sensitivity: no noise needed"}[self.route]
            self.guarantee = PP(eps, delta, self._provenance(note))
        self.target = {"alpha": alpha, "eps": eps, "delta": delta}
        scale = fam.scale if fam is not None else 0.0
        self.group = None
        if fam is not None and eps is not None and framework.group_sensitivity is not None:
            g = framework.group_sensitivity
            gfam = (noise if d == 1 else noise.iid(d))
            gfam = gfam.calibrate(alpha=alpha, eps=eps, sensitivity=g) if alpha is not None else \
                gfam.calibrate(eps=eps, delta=delta, sensitivity=g)
            from ._base import GroupComparison
            self.group = GroupComparison(g, gfam.scale, gfam.scale / scale, framework.group_note)

    def lattice_sensitivity(self) -> float:
        """Delta_G: snapping moves W_inf by at most c g, and R_alpha(zeta, Delta_G) depends on the
        scale family only through Delta_G / scale (see the base class)."""
        return float(self.sensitivity.value)

    def epsilon(self, alpha: float) -> float:
        """Certified R_alpha(zeta, Delta_G) at order ``alpha`` in (1, inf]."""
        if self.noise is None:
            return 0.0
        return self.noise.epsilon(V.alpha("alpha", alpha), self._delta)

    def to_pp(self, delta: float, *, lattice: Any = None) -> PP:
        """The least certified eps of (eps, ``delta``)-PP for this noise: from its privacy profile where
        it can be certified (:func:`puffer.noise.profile.eps_at`), else (and never worse than) the
        RPP curve's conversion (:meth:`RPPCurve.to_pp`, optimised over alpha and the cited conversions).

        ``lattice``: None (the default) describes the noise's *continuous* law, i.e. a
        floating-point release (``float_noise``); a lattice release (``secure=True``, the publishing
        engines) draws an integer law instead: pass its :class:`~puffer.lattice.LatticePlan` (or
        True for :meth:`lattice_plan`). The rounded Laplace keeps the continuous profile (data
        processing); the discrete Gaussian does not (its hockey stick is larger: sigma = 1 lattice
        unit, shift 2, continuous delta 1e-9 -> 2.27e-9), so for one coordinate its exact hockey
        stick is computed (:meth:`puffer.lattice.LatticeLaw.eps_at`: pmf sums, certified tails, at the
        padded integer shift, the sup over smaller shifts by log-concavity), and for a vector only
        the Rényi curve's conversion is used (CKS20 Prop 5 bounds its Rényi curve by the continuous
        one). The provenance note says which law the (eps, delta) describes."""
        pp = self.rpp_curve.to_pp(delta)
        if self.noise is None:
            return pp
        from ..noise import profile

        prov = self.rpp_curve.provenance
        fam = type(getattr(self.noise, "base", self.noise)).__name__
        plan = None
        if lattice is not None and lattice is not False:
            from ..lattice import LatticePlan

            plan = self.lattice_plan() if lattice is True else lattice
            if not isinstance(plan, LatticePlan):
                raise ParameterTypeError("lattice", lattice, "None, True or a puffer.lattice.LatticePlan")
            if plan.sensitivity is None or plan.sensitivity != self.lattice_sensitivity():
                raise ParameterError("lattice", repr(plan), f"a lattice plan padded for this mechanism's sensitivity "
                                     f"{self.lattice_sensitivity()!r} (its lattice_plan())")
        if plan is not None and plan.family == "gaussian":
            note = ("(eps, delta) of the discrete Gaussian of the lattice release "
                    f"(2^{plan.g_exp} Z, sigma {plan.law.scale:.6g} steps)")
            if plan.n == 1 and plan.padded_sensitivity is not None:
                from fractions import Fraction

                m = math.floor(plan.padded_sensitivity / Fraction(2) ** plan.g_exp)   # the largest integer shift
                e = plan.law.eps_at(pp.delta, m)
                if e < pp.eps:
                    ref = Ref("canonne2020", "Prop 5", "the discrete Gaussian (its pmf summed exactly)")
                    return PP(e, pp.delta, prov.cite(ref, notes=note + ": its exact hockey stick at the padded "
                                                     f"shift {m}") if prov is not None else None)
            return PP(pp.eps, pp.delta, prov.cite(Ref("canonne2020", "Prop 5"), notes=note + ": its Renyi curve "
                                                  "(at most the continuous one) converted") if prov is not None else None)
        law = (f"the rounded Laplace of the lattice release (at most the continuous {fam}'s: data processing)"
               if plan is not None else f"the continuous {fam} law (a floating-point release; a lattice release: "
               "to_pp(delta, lattice=True))")
        if profile.supports(self.noise):
            e = profile.eps_at(self.noise, delta, self._delta)
            if e < pp.eps:
                refs = profile.REFS
                return PP(e, pp.delta, prov.cite(*refs, notes=f"(eps, delta) from the privacy profile of {law}")
                          if prov is not None else None)
        return PP(pp.eps, pp.delta, prov.cite(notes=f"(eps, delta) of {law}") if prov is not None else None)


class ApproximateWasserstein(Mechanism):
    """The General Approximate Wasserstein Mechanism (Pierquin et al. 2024, Thm 4.3, Prop C.2).

    ``delta`` is the approximate-RPP delta; Delta_{G,delta} is the largest (z, delta)-near radius
    over priors and pairs. ``noise`` with its scale, or a target ``eps`` at order ``alpha``
    (alpha = inf for a PP target) to calibrate; infeasible targets (eps <= alpha/(alpha-1)
    log(1/(1-delta))) are rejected.

    Parameters
    ----------
    framework : Framework
        The Pufferfish framework (a 1-D query): the near radius is computed from its
        conditional query laws.
    noise : NoiseFamily, family class or name
        A noise with its scale, or a family to calibrate with ``eps``.
    delta : float
        The approximate-RPP delta in (0, 1): mass each conditional law may move beyond the radius.
    alpha : float, optional
        The Rényi order of the guarantee (default inf: a PP-type target).
    eps : float, optional
        The target eps at order ``alpha``; the noise is calibrated to reach it.
    """
    guarantee: ApproxRPP   # narrows Mechanism.guarantee
    #: the noise with its (calibrated) scale; None when the near radius is 0 (no noise needed)
    noise: NoiseFamily | None

    theorem = "Pierquin et al. 2024, Thm 4.3 / Prop C.2 (General Approximate Wasserstein Mechanism)"
    refs = (Ref("pierquin2024", "Thm 4.3"), Ref("pierquin2024", "Prop C.2"))

    def __init__(self, framework: Framework, noise: Any, delta: float, *, alpha: float | None = None,
                 eps: float | None = None):
        self.framework = self._check_framework(framework)
        if framework.dim != 1:
            raise ParameterError("framework", f"query on R^{framework.dim}", "a 1-D query (near radius is 1-D)")
        from ..noise import NoiseFamily, as_noise

        self.delta = V.delta_open("delta", delta)
        self.alpha = math.inf if alpha is None else V.alpha("alpha", alpha)
        noise = as_noise(noise, calibrating=True) if eps is not None else noise
        if not isinstance(noise, NoiseFamily):
            raise ParameterTypeError("noise", noise, "a puffer.noise instance with its scale "
                                     "(or a family class / name together with a target eps=)")
        self.sensitivity = framework.near_radius(self.delta)
        z = round_up(self.sensitivity.value, 2)   # correctly rounded distance, stepped up
        self._z = z
        if eps is not None:
            eps = V.positive("eps", eps)
            eps_noise = eps - self._penalty(self.alpha)
            if eps_noise <= 0:
                raise ParameterError("eps", eps, f"eps > alpha/(alpha-1) log(1/(1-delta)) = {self._penalty(self.alpha)!r}")
            noise = None if z == 0 else noise.calibrate(alpha=self.alpha, eps=eps_noise, sensitivity=z)
        elif z == 0:
            noise = None
        self.noise = noise
        prov = self._provenance()
        self.guarantee = ApproxRPP(self.alpha, self.epsilon(self.alpha), self.delta, prov)
        self.group = None

    def lattice_sensitivity(self) -> float:
        """The near radius Delta_{G,delta}: snapping moves every coupled pair by at most c g, so
        the (z, delta)-near radius grows by at most c g; the bound depends on the noise through
        R_alpha(zeta, Delta_{G,delta}) only (see the base class)."""
        return float(self.sensitivity.value)

    def _penalty(self, alpha: float) -> float:
        # alpha/(alpha-1) * log(1/(1-delta)); -log1p(-delta) is accurate for tiny delta. Rounded up.
        f = 1.0 if math.isinf(alpha) else alpha / (alpha - 1.0)
        return round_up(f * -math.log1p(-self.delta))

    def epsilon(self, alpha: float) -> float:
        """Certified eps of the approximate RPP guarantee at order ``alpha`` (> 1, or inf)."""
        alpha = V.alpha("alpha", alpha)
        r = 0.0 if self.noise is None else self.noise.epsilon(alpha, self._z)
        return round_up(r + self._penalty(alpha))

    def to_pp(self, delta: float | None = None) -> PP:
        """Best (eps, delta)-PP over the default orders and alpha = inf (Prop 4.1 / C.1).

        Parameters
        ----------
        delta : float, optional
            The delta of the PP guarantee (default ``2 * self.delta``).
        """
        best = None
        for a in list(default_orders()) + [math.inf]:
            e = self.epsilon(a)
            if not math.isfinite(e):
                continue
            g = ApproxRPP(a, e, self.delta, self.guarantee.provenance).to_pp(delta)
            if best is None or g.eps < best.eps:
                best = g
        if best is None:
            return PP(math.inf, 2 * self.delta if delta is None else delta, self.guarantee.provenance)
        return best


class _PlanData:
    """The DAGWM plan data of a framework: every prior and pair's quantile coupling as
    displacements v = (x - x')(1 + 2^-51) and log-masses, concatenated (plan k in
    [starts[k], starts[k+1])), with the distinct displacements (uniq, inv) for the divergences."""

    __slots__ = ("meta", "v", "logm", "starts", "uniq", "merged", "__weakref__")

    def __init__(self, meta: list[tuple[Any, Any]], v: np.ndarray, logm: np.ndarray, starts: np.ndarray):
        self.meta, self.v, self.logm, self.starts = meta, v, logm, starts
        self.uniq, inv = np.unique(v, return_inverse=True)
        # entries of a plan with the same displacement merged once (an upper bound of their
        # log-mass): every order then costs one term per distinct displacement and plan
        offsets = np.r_[starts, v.size].astype(np.int64)
        self.merged = _core.kantorovich.dagwm_merge(logm, inv.reshape(-1).astype(np.int64), offsets)

    def __repr__(self) -> str:
        return f"_PlanData(plans={len(self.meta)}, entries={self.v.size})"


# Plan data per framework (frameworks are immutable once built): calibration constructs the
# mechanism at many scales of the same framework.
_PLAN_CACHE: weakref.WeakKeyDictionary[Framework, _PlanData] = weakref.WeakKeyDictionary()


def _dagwm_plan_data(framework: Framework) -> _PlanData:
    data = _PLAN_CACHE.get(framework)
    if data is None:
        from ..models import MarkovChainFramework

        if isinstance(framework, MarkovChainFramework) and framework._identity_grid:
            data = _dagwm_plan_data_markov(framework)   # real-valued states: the laws path (value units)
        else:
            data = _PlanData(*_dagwm_plans_reference(framework))
        _PLAN_CACHE[framework] = data
    return data


def _dagwm_plans_reference(framework: Framework) -> tuple[list[tuple[Any, Any]], np.ndarray, np.ndarray, np.ndarray]:
    """(meta, v, logm, starts) by the per-pair Python path (the reference of the Markov kernel)."""
    from .. import transport

    meta, vs, ms = [], [], []
    for th, pair, P, Q in framework.pair_laws():
        plan = transport.quantile_coupling(P, Q)
        vs.append(np.asarray(plan.source, dtype=np.float64) - np.asarray(plan.target, dtype=np.float64))
        # Every plan entry carries positive mass; below the smallest normal double a float
        # mass may have underflowed (log-space laws) or lost its relative precision, so it is
        # replaced by 2^-1022, an upper bound: the moment, and eps, can only grow.
        ms.append(np.maximum(np.asarray(plan.mass, dtype=np.float64), 2.0 ** -1022))
        meta.append((th, pair))
    if not meta:
        raise ParameterError("framework", framework.name, "at least one pair of possible secrets")
    # |x - y| is correctly rounded; scale up by 2 ulps so the shift divergences are not below
    # those of the exact differences (the built-in families' divergences grow with |v|)
    v = np.concatenate(vs) * (1.0 + 2.0 ** -51)
    logm = np.log(np.concatenate(ms))
    starts = np.r_[0, np.cumsum([x.size for x in vs])[:-1]].astype(np.int64)
    return meta, v, logm, starts


def _dagwm_plan_data_markov(framework: Any) -> _PlanData:
    """The same data from the core, laws and plans built there (no law stored in Python)."""
    from ..models import _check_memory, _theta_only

    _theta_only(framework, "the DAGWM plans")

    k, T = framework._k, framework._T
    ab = [(a, b) for a in range(k) for b in range(a + 1, k)]
    span = int(framework._vals.max() - framework._vals.min())
    # a plan has at most 2 (T span + 1) entries of 16 B, held twice while they are gathered
    _check_memory("framework", 64.0 * len(framework._thetas) * T * len(ab) * (T * span + 1),
                  lambda avail: framework._alternatives(avail, "DAGWM stores the transport plan of every prior, "
                                                        "position and pair"))
    from .._progress import resolve

    cb = resolve(None, seconds=framework.cost().seconds, label=f"DAGWM plans (T={T})")
    v, logm, off, valid, _ = _core.kantorovich.markov_dagwm_plans(framework._M, framework._pi, framework._vals, T,
                                                                  framework._threads, progress=cb)
    th_i, t_i, p_i = np.nonzero(valid)                 # C order = the order of pair_laws()
    if th_i.size == 0:
        raise ParameterError("framework", framework.name, "at least one pair of possible secrets")
    thetas = framework._thetas
    lab = framework._label   # the framework's secret labels (state names)
    meta = [(thetas[i], (lab(t, ab[p][0]), lab(t, ab[p][1])))
            for i, t, p in zip(th_i.tolist(), t_i.tolist(), p_i.tolist())]
    return _PlanData(meta, v, logm, np.asarray(off[:-1], dtype=np.int64))


def _largest(lm: np.ndarray) -> tuple[float, int]:
    """The largest per-plan log-moment and its witness: the first plan within WITNESS_BAND
    (absolute, on the log scale) of it, so that near-equal plans do not make the witness
    depend on rounding noise."""
    from .kantorovich import WITNESS_BAND

    best = float(np.max(lm))
    return best, int(np.argmax(lm >= best - WITNESS_BAND * max(1.0, abs(best))))


def _dagwm_log_moment_reference(v: np.ndarray, logm: np.ndarray, starts: np.ndarray, noise: Any, a2: float
                                ) -> np.ndarray:
    """Per-plan log sum m exp((a2 - 1) D_a2) by numpy (the reference of the compiled kernel)."""
    s = np.asarray(noise.renyi_shift(a2, -v), dtype=np.float64)
    t = logm + (a2 - 1.0) * s
    mx = np.maximum.reduceat(t, starts)
    seg = np.add.reduceat(np.exp(t - np.repeat(mx, np.diff(np.r_[starts, t.size]))), starts)
    return mx + np.log(seg)


class DistributionAwareWasserstein(Mechanism):
    """The Distribution-Aware GWM (Pierquin et al. 2024, Thm 4.5) for 1-D queries and a noise with its scale.

    eps(alpha) = log(Delta_G^{zeta,q,alpha}) / (q (alpha - 1)), with
    Delta_G^{zeta,q,alpha} = max over priors and pairs of E_pi[exp((a'-1) D_a'(zeta || zeta * (X - Y)))],
    a' = q(alpha - 1) + 1, evaluated on the quantile coupling pi (an upper bound on the infimum over
    couplings for every noise, exact for convex costs). q = 1 is always best (Pierquin et al. 2024).

    The plans are computed once per framework (in the core for Markov chains) and the per-plan
    log-sum-exp runs in the core, each value moved up by its rounding bound: never below the numpy
    reference path, within 1e-9 relative of it (tested).

    Parameters
    ----------
    framework : Framework
        The Pufferfish framework (a 1-D query): its secret pairs' quantile couplings carry the
        exponential-moment cost.
    noise : NoiseFamily
        The noise with its scale (see :meth:`calibrate` for a target).
    q : float
        The Hoelder exponent q >= 1 of Thm 4.5 (q = 1 is always best).
    """
    guarantee: RPPCurve | PP   # narrows Mechanism.guarantee: PP when calibrated to (eps, delta)
    #: the noise with the scale given (or calibrated by :meth:`calibrate`)
    noise: NoiseFamily
    #: eps(alpha) at every order
    rpp_curve: RPPCurve

    theorem = "Pierquin et al. 2024, Thm 4.5 (Distribution-Aware General Wasserstein Mechanism)"
    refs: tuple[Ref, ...] = (Ref("pierquin2024", "Thm 4.5"),)

    def __init__(self, framework: Framework, noise: Any, *, q: float = 1.0, _curve: bool = True):
        # _curve=False: no Renyi curve evaluated (the calibration's probes only need epsilon(alpha))
        self.framework = self._check_framework(framework)
        if framework.dim != 1:
            raise ParameterError("framework", f"query on R^{framework.dim}", "a 1-D query")
        from ..noise import NoiseFamily

        self.q = V.real("q", q, lo=1.0, expected="q >= 1")
        if not isinstance(noise, NoiseFamily):
            raise ParameterTypeError("noise", noise, "a puffer.noise instance with its scale")
        self.noise = noise
        data = _dagwm_plan_data(framework)
        self._meta, self._v, self._logm, self._starts = data.meta, data.v, data.logm, data.starts
        self._data = data
        w = np.maximum.reduceat(np.abs(self._v), self._starts)
        k = int(np.argmax(w))
        from ..framework import Sensitivity
        self.sensitivity = Sensitivity(float(w[k]), "w_inf", self._meta[k])
        self.group = None
        if not _curve:
            return
        self.rpp_curve = RPPCurve.from_function(self.epsilon, provenance=self._provenance(
            "eps(alpha) from the exponential-moment cost on the quantile coupling"))
        self.guarantee = self.rpp_curve

    def lattice_sensitivity(self) -> float:
        """Refused: Thm 4.5 averages over the coupling's shifts, and snapping moves each shift by
        up to a lattice step (a shift of 0 becomes one of g): scaling the noise does not cover
        that. Release a lattice with :class:`GeneralWasserstein` instead."""
        raise ParameterError("secure", True, "a mechanism certified on a lattice: the distribution-aware bound "
                             "(Pierquin et al. 2024, Thm 4.5) averages over the coupling's shifts, which snapping "
                             "moves by up to a lattice step each; use GeneralWasserstein for a lattice release")

    def log_moment(self, alpha: float) -> tuple[float, tuple[Any, Any]]:
        """(log Delta_G^{zeta,q,alpha}, witness (theta, pair)) at order ``alpha`` (finite, > 1),
        an upper bound rounded upward.

        The per-plan log-sum-exp runs in the core (parallel over plans, each bound moved up by
        its rounding error); the shift divergence is evaluated once per distinct displacement."""
        alpha = V.alpha("alpha", alpha, allow_inf=False)
        a2 = self.q * (alpha - 1.0) + 1.0
        d = self._data
        s = np.asarray(self.noise.renyi_shift(a2, -d.uniq), dtype=np.float64)
        lm = _core.kantorovich.dagwm_log_moments(d.merged[0], s, d.merged[1], d.merged[2], a2 - 1.0)
        best, k = _largest(lm)
        # log-sum-exp of n terms: a few ulps of relative error per term; covered with margin.
        return round_up(best + 1e-14 * abs(best), 8), self._meta[k]

    def epsilon(self, alpha: float) -> float:
        """Certified eps at order ``alpha``: log(Delta_G^{zeta,q,alpha}) / (q (alpha - 1))."""
        lm, _ = self.log_moment(alpha)
        return round_up(max(lm, 0.0) / (self.q * (alpha - 1.0)))

    def to_pp(self, delta: float) -> PP:
        """(eps, ``delta``)-PP from the Rényi curve (the least cited conversion, optimised over alpha)."""
        return self.rpp_curve.to_pp(delta)

    @classmethod
    def calibrate(cls, framework: Framework, noise: Any, *, eps: float, alpha: float | None = None,
                  delta: float | None = None, q: float = 1.0) -> DistributionAwareWasserstein:
        """The mechanism with the smallest verified scale of ``noise``'s family such that
        eps(alpha) <= eps, or with ``delta`` instead of ``alpha`` such that its Renyi curve converts
        to (eps, delta)-PP (its guarantee is then ``PP(eps, delta)``; bisection on log scale; see
        :mod:`.dagwm_calibration`).

        Parameters
        ----------
        framework : Framework
            The Pufferfish framework (a 1-D query).
        noise : NoiseFamily
            The family to calibrate, as an instance (its scale is the starting point).
        eps : float
            The target eps: at order ``alpha``, or of (eps, delta)-PP with ``delta``.
        alpha : float, optional
            The Rényi order of an (alpha, eps)-RPP target.
        delta : float, optional
            Instead of ``alpha``: the delta of an (eps, delta)-PP target.
        q : float
            The Hoelder exponent q >= 1 of Thm 4.5.

        Examples
        --------
        >>> import puffer
        >>> from puffer.noise import Gaussian
        >>> m = DistributionAwareWasserstein.calibrate(puffer.models.correlated_pair(), Gaussian(1.0),
        ...                                            alpha=2.0, eps=1.0)
        >>> m.epsilon(2.0) <= 1.0 < DistributionAwareWasserstein(
        ...     puffer.models.correlated_pair(), Gaussian(m.noise.scale * 0.999)).epsilon(2.0)
        True
        """
        from .dagwm_calibration import calibrate_dagwm
        return calibrate_dagwm(cls, framework, noise, alpha=alpha, eps=eps, delta=delta, q=q)
