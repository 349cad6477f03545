"""The empirical auditor against every mechanism of puffer.mechanisms, deliberately broken
variants, and the exact oracles.

Error rates (the auditor's contract, tested here):

* false alarm: a correct mechanism is flagged with probability <= 1 - confidence per report
  (Clopper-Pearson on a held-out half, Bonferroni over pairs and directions). The random-
  framework sweep audits N reports at confidence 1 - 0.01/N each, so the probability that the
  sweep shows any false violation is <= 1 % (and seeds are fixed: the outcome is reproducible).
* power: each broken variant must be flagged at confidence 0.99, with the approximate power of
  a rerun at the same n, Phi((lower - claimed) / se) (``AuditReport.power``), >= 0.99.
"""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import puffer
from puffer import audit, mechanisms, models
from puffer.dist import DiscreteDist
from puffer.errors import ParameterError, ParameterTypeError
from puffer.framework import Framework
from puffer.guarantees import PP, RPP
from puffer.mechanisms import Mechanism
from puffer.noise import IID, Cauchy, Gaussian, Laplace

# ----------------------------------------------------------------------------- factories
# One calibrated instance per mechanism class: (factory(framework), supports d > 1).
FACTORIES = {
    "Wasserstein": (lambda fw: mechanisms.Wasserstein(fw, eps=1.0), True),
    "GeneralWasserstein": (lambda fw: mechanisms.GeneralWasserstein(fw, Gaussian, alpha=2.0, eps=1.0), True),
    "ApproximateWasserstein": (lambda fw: mechanisms.ApproximateWasserstein(fw, Laplace, 0.05, eps=1.0), False),
    "DistributionAwareWasserstein": (lambda fw: mechanisms.DistributionAwareWasserstein(fw, Gaussian(1.5)), False),
    "Kantorovich": (lambda fw: mechanisms.Kantorovich(fw, eps=1.0, method="thm2"), False),
    "KantorovichGaussian": (lambda fw: mechanisms.KantorovichGaussian(fw, eps=1.0, delta=1e-3, variant="tail"), False),
    "CauchyMechanism": (lambda fw: mechanisms.CauchyMechanism(fw, alpha=2.0, eps=1.0), False),
    # Markov chains only: a random fast-mixing chain per framework (so the sweep audits many)
    "MarkovQuilt": (lambda fw: mechanisms.MarkovQuilt(_chain_for(fw), eps=1.0, method="exact"), False),
}


def _chain_for(fw: Framework):
    """A 2-state chain drawn from the framework's digest: mixing fast enough that the quilt is
    non-trivial (the noise is not the group fallback T / eps)."""
    rng = np.random.default_rng(int(fw.digest().split(":")[-1][:12], 16))
    p, q = rng.uniform(0.3, 0.7, 2)
    return models.markov_chain([[1 - p, p], [q, 1 - q]], T=int(rng.integers(3, 8)))


def mechanism_classes() -> list[str]:
    out = []
    for name in mechanisms.__all__:
        obj = getattr(mechanisms, name)
        if inspect.isclass(obj) and issubclass(obj, Mechanism) and obj is not Mechanism:
            out.append(name)
    return out


def random_framework(seed: int, dim: int = 1) -> Framework:
    """1-2 priors, 2-3 secrets (all pairs), laws on 1-4 random integer atoms in [0, 4]^dim."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 4))
    conds = {}
    for th in range(int(rng.integers(1, 3))):
        per = {}
        for s in range(k):
            m = int(rng.integers(1, 5))
            atoms = rng.integers(0, 5, size=(m, dim)).astype(float)
            if dim == 1:
                atoms = atoms[:, 0]
            per[f"s{s}"] = DiscreteDist(atoms, rng.dirichlet(np.ones(m)), normalize=True)
        conds[f"theta{th}"] = per
    return Framework.from_conditionals(conds, "all", name=f"random {seed}")


POINT = Framework.from_conditionals({"t": {"a": DiscreteDist([0.0], [1.0]), "b": DiscreteDist([1.0], [1.0])}},
                                    [("a", "b")], name="point masses at distance 1")


# ----------------------------------------------------------------------------- coverage
def test_every_mechanism_class_has_a_factory():
    """A mechanism class added to puffer.mechanisms must get a factory here (and so an audit)."""
    missing = [c for c in mechanism_classes() if c not in FACTORIES]
    assert not missing, f"add an audit factory for {missing}"
    assert len(mechanism_classes()) >= 6


@pytest.mark.parametrize("cls", mechanism_classes())
def test_each_mechanism_class_audited_without_violation(cls):
    make, _ = FACTORIES[cls]
    for fw in (models.correlated_pair(), models.independent_users([0.3, 0.6, 0.5], users=[0])):
        m = make(fw)
        assert type(m).__name__ == cls
        r = audit.empirical(m, pairs="all", n=20_000, rng=11, confidence=0.999)
        assert not r.violated, r
        assert 0.0 <= r.lower <= r.claimed and r.witness is not None


# ----------------------------------------------------------------------------- false alarms
N_FRAMEWORKS = 22


def _sweep():
    todo = []
    for seed in range(N_FRAMEWORKS):
        dim = 2 if seed % 6 == 5 else 1
        fw = random_framework(seed, dim)
        for name, (make, multi) in FACTORIES.items():
            if dim > 1 and not multi:
                continue
            todo.append((seed, name, fw, make))
    return todo


@pytest.mark.slow
def test_no_false_violation_across_random_frameworks():
    """>= 20 random frameworks x every mechanism, all pairs; family-wise false alarm <= 1 %."""
    todo = _sweep()
    conf = 1.0 - 0.01 / len(todo)
    assert len({s for s, *_ in todo}) >= 20
    bad, tightest = [], 0.0
    for seed, name, fw, make in todo:
        m = make(fw)
        r = audit.empirical(m, pairs="all", n=10_000, rng=seed, confidence=conf)
        tightest = max(tightest, r.ratio)
        if r.violated:
            bad.append((seed, name, r))
    assert not bad, bad
    assert tightest > 0.3   # the sweep is not vacuous: some audits come close to their claim


# ----------------------------------------------------------------------------- broken variants
class ScaledNoise(Mechanism):
    """A correct mechanism's claim, released with its noise scale multiplied by ``factor``."""

    def __init__(self, m: Mechanism, factor: float):
        self.framework, self.sensitivity, self.guarantee, self.group = m.framework, m.sensitivity, m.guarantee, None
        self.target = m.target
        self.noise = m.noise._with_scale(m.noise.scale * factor)


class IgnoresCorrelation(Mechanism):
    """Laplace b = 1/eps: the per-record sensitivity 1 where the correlated pair needs W_inf = 2."""

    def __init__(self, fw: Framework, eps: float):
        self.framework, self.group = fw, None
        self.sensitivity = fw.w_inf()
        self.noise = Laplace(1.0 / eps)
        self.guarantee = PP(eps)


class CauchyCor41(Mechanism):
    """Pierquin et al. 2024, Cor 4.1 with k = 2, q = 1, alpha = 2 (Q_1(w) = w), iid Cauchy(gamma)
    on R^d and the W_6 (here = W_inf: point masses) l2 sensitivity Delta.

    printed=True: eps = d log(1 + (Delta / (d gamma))^2), the printed d^2 form (unsafe for d > 2);
    printed=False: eps = d log(1 + Delta^2 / (2 d gamma^2)), what the proof supports (exact
    convention), tight for a shift along the diagonal."""

    def __init__(self, fw: Framework, gamma: float, printed: bool):
        self.framework, self.group = fw, None
        self.sensitivity = fw.w_inf(norm=2)
        D, d = self.sensitivity.value, fw.dim
        eps = d * math.log1p((D / (d * gamma)) ** 2) if printed else d * math.log1p(D * D / (2 * d * gamma ** 2))
        self.noise = IID(Cauchy(gamma), d)
        self.guarantee = RPP(2.0, eps)


S3 = math.sqrt(3.0)
DIAG3 = Framework.from_conditionals({"t": {"a": DiscreteDist([[0.0, 0.0, 0.0]], [1.0]),
                                           "b": DiscreteDist([[S3, S3, S3]], [1.0])}}, [("a", "b")],
                                    name="R^3 point masses at l2 distance 3 along the diagonal")


def _broken():
    W = mechanisms.Wasserstein(POINT, eps=1.0)
    G = mechanisms.GeneralWasserstein(POINT, Gaussian, alpha=2.0, eps=1.0)
    K = mechanisms.Kantorovich(models.correlated_pair(), eps=1.0, method="thm2")
    return [
        ("Laplace scale 10% too small", ScaledNoise(W, 0.9), 200_000),
        ("Laplace scale 30% too small", ScaledNoise(W, 0.7), 100_000),
        ("Gaussian RPP scale 10% too small", ScaledNoise(G, 0.9), 1_000_000),
        ("Gaussian RPP scale 30% too small", ScaledNoise(G, 0.7), 200_000),
        ("Kantorovich Thm 2 scale 30% too small", ScaledNoise(K, 0.7), 400_000),
        ("sensitivity under-estimated (correlation ignored)", IgnoresCorrelation(models.correlated_pair(), 1.0),
         200_000),
        ("printed d^2 Cauchy form of Cor 4.1 (d = 3)", CauchyCor41(DIAG3, 1.0, printed=True), 200_000),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("label, m, n", _broken(), ids=lambda x: x if isinstance(x, str) else "")
def test_broken_variant_detected_with_power(label, m, n):
    r = audit.empirical(m, pairs="all", n=n, rng=7, confidence=0.99)
    assert r.violated, (label, r)
    assert r.power() >= 0.99, (label, r.lower, r.claimed, r.se)


def test_corrected_cor41_is_not_flagged_and_is_tight():
    """The safe form of Cor 4.1 is exact for a diagonal shift: no violation, ratio near 1."""
    r = audit.empirical(CauchyCor41(DIAG3, 1.0, printed=False), n=200_000, rng=3)
    assert not r.violated and r.ratio > 0.85, r


def test_claimed_argument_gives_power_against_a_smaller_claim():
    m = mechanisms.Wasserstein(POINT, eps=1.0)                # tight: true loss is eps = 1
    r = audit.empirical(m, n=200_000, rng=5, claimed=0.9)
    assert r.claimed == 0.9 and r.violated and r.power() >= 0.99
    r = audit.empirical(m, n=200_000, rng=5)
    assert r.claimed == 1.0 and not r.violated and r.ratio > 0.95
    r = audit.empirical(m, n=50_000, rng=5, claimed=PP(0.5))
    assert r.kind == "pp" and r.violated


# ----------------------------------------------------------------------------- exact oracles
@pytest.mark.parametrize("seed", range(6))
def test_empirical_below_exact_laplace_loss(seed):
    fw = random_framework(100 + seed)
    for m in (mechanisms.Wasserstein(fw, eps=1.0), mechanisms.Kantorovich(fw, eps=1.0, method="thm2")):
        if m.noise is None:
            continue
        b = m.noise.scale
        exact = audit.framework_loss(fw, lambda P, Q, b=b: audit.laplace_privacy_loss(P, Q, b))
        r = audit.empirical(m, pairs="all", n=40_000, rng=seed)
        assert r.lower <= exact <= m.guarantee.eps * (1 + 1e-9), (r, exact)


def test_empirical_below_exact_renyi_divergence_and_close_when_tight():
    fw = models.correlated_pair()
    m = mechanisms.GeneralWasserstein(fw, Gaussian, alpha=2.0, eps=1.0)
    P, Q = fw.conditional("theta", "X1=0"), fw.conditional("theta", "X1=1")
    exact = max(audit.renyi_divergence(P, Q, m.noise, 2.0), audit.renyi_divergence(Q, P, m.noise, 2.0))
    r = audit.empirical(m, n=400_000, rng=2)
    assert r.lower <= exact <= r.claimed
    assert r.lower >= 0.75 * exact, (r.lower, exact)
    # the laplace oracle on point masses: sup loss = 1/b exactly, the auditor gets close
    w = mechanisms.Wasserstein(POINT, eps=1.0)
    e = audit.laplace_privacy_loss(POINT.conditional("t", "a"), POINT.conditional("t", "b"), w.noise.scale)
    r = audit.empirical(w, n=200_000, rng=4)
    assert 0.95 * e <= r.lower <= e


# ----------------------------------------------------------------------------- interface
def test_report_fields_repr_and_json():
    import json

    m = mechanisms.Wasserstein(models.correlated_pair(), eps=1.0)
    r = audit.empirical(m, n=5_000, rng=1)
    assert r.kind == "pp" and r.delta == 0.0 and r.alpha is None and r.n == 5_000
    assert r.interval == (r.lower, math.inf) and r.estimate >= r.lower
    assert r.samples == 10_000 and r.samples_per_second > 0
    assert len(r.pairs) == 2 and r.witness in r.pairs
    assert "Wasserstein" in repr(r) and "\n" not in repr(r)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["violated"] is False and d["claimed"] == 1.0
    # reproducible
    assert audit.empirical(m, n=5_000, rng=1).lower == r.lower
    assert audit.empirical(m, n=5_000, rng=np.random.default_rng(3)).lower >= 0.0


def test_claims_of_each_guarantee_kind():
    fw = models.correlated_pair()
    g = mechanisms.GeneralWasserstein(fw, Gaussian, alpha=3.0, eps=1.0)
    assert audit.claim_of(g)[:3] == ("rpp", pytest.approx(1.0), 3.0)
    assert audit.claim_of(g, alpha=2.0)[2] == 2.0
    a = mechanisms.ApproximateWasserstein(fw, Laplace, 0.05, eps=1.0)
    kind, eps, _, delta, _ = audit.claim_of(a)
    assert kind == "pp" and delta == 0.05 and eps == a.guarantee.to_pp().eps
    kg = mechanisms.KantorovichGaussian(fw, eps=1.0, delta=1e-3, variant="tail")
    assert audit.claim_of(kg)[::3] == ("pp", 1e-3)
    assert audit.claim_of(g, claimed=RPP(5.0, 2.0))[:3] == ("rpp", 2.0, 5.0)
    assert audit.claim_of(mechanisms.Wasserstein(fw, eps=1.0), claimed=RPP(math.inf, 0.5))[:2] == ("pp", 0.5)


def test_statistics_histogram_and_frameworks_and_pairs():
    fw = models.correlated_pair()
    m = mechanisms.Wasserstein(fw, eps=1.0)
    exact = audit.framework_loss(fw, lambda P, Q: audit.laplace_privacy_loss(P, Q, m.noise.scale))
    r = audit.empirical(m, n=100_000, rng=1, statistic="histogram")
    assert r.statistic.startswith("histogram") and 0.5 * exact < r.lower <= exact
    other = models.correlated_pair(rho=0.9)       # audit the claim under another prior
    r = audit.empirical(m, other, pairs=[("X1=0", "X1=1")], n=50_000, rng=1)
    assert not r.violated
    r = audit.empirical(m, pairs=[("theta", ("X1=1", "X1=0"))], n=5_000, rng=1)
    assert r.pairs[0].pair == ("X1=1", "X1=0")
    # R^2 outputs with the black-box statistic (projection + histogram)
    fw2 = random_framework(5, dim=2)
    r = audit.empirical(mechanisms.Wasserstein(fw2, eps=1.0), pairs="all", n=20_000, rng=1, statistic="histogram")
    assert not r.violated


@pytest.mark.parametrize("kw, err", [
    ({"n": 10}, ParameterError), ({"n": 1.5}, ParameterTypeError), ({"confidence": 1.0}, ParameterError),
    ({"confidence": 0.0}, ParameterError), ({"pairs": "some"}, ParameterError), ({"pairs": 3}, ParameterTypeError),
    ({"pairs": [("X1=0", "nope")]}, ParameterError), ({"pairs": [("t", ("X1=0", "X1=1"))]}, ParameterError),
    ({"statistic": "neural"}, ParameterError), ({"claimed": -1.0}, ParameterError),
    ({"alpha": 2.0}, ParameterError), ({"framework": "fw"}, ParameterTypeError),
])
def test_bad_arguments_are_named_errors(kw, err):
    m = mechanisms.Wasserstein(models.correlated_pair(), eps=1.0)
    with pytest.raises(err):
        audit.empirical(m, **{"n": 1000, **kw})


def test_bad_mechanism_is_a_named_error():
    with pytest.raises(ParameterTypeError):
        audit.empirical(object(), n=1000)
    with pytest.raises(ParameterTypeError):
        audit.empirical(mechanisms.Wasserstein(models.correlated_pair(), eps=1.0), n=1000,
                        claimed="1.0")


def test_exact_oracles_importable_from_old_names():
    for name in ("laplace_privacy_loss", "renyi_divergence", "max_privacy_loss", "loss_tail_probability",
                 "framework_loss"):
        assert callable(getattr(puffer.audit, name))
        assert getattr(puffer.audit, name) is getattr(puffer.audit.exact, name)


def test_zero_sensitivity_and_unsampleable_noise():
    same = Framework.from_conditionals({"t": {"a": DiscreteDist([0.0, 1.0], [0.5, 0.5]),
                                              "b": DiscreteDist([0.0, 1.0], [0.5, 0.5])}}, [("a", "b")])
    m = mechanisms.Wasserstein(same, eps=1.0)
    assert m.noise is None
    r = audit.empirical(m, n=20_000, rng=1)          # released as is: identical laws, no leak
    assert r.statistic.startswith("histogram") and r.lower == 0.0 and not r.violated
    k = mechanisms.Kantorovich(models.correlated_pair(), eps=1.0, metric=np.abs, eta_inv=lambda v: 1 / v)
    with pytest.raises(ParameterTypeError, match="noise"):   # described, not sampled: a named error
        audit.empirical(k, n=1_000)
