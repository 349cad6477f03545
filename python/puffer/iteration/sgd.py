"""Noisy projected SGD on correlated records: its privacy accountant and a trainer.

Noisy projected SGD on correlated records: the accountant of Pierquin, Bellet, Tommasi,
Boussard 2024 (§6.4, Prop 6.4, Lemma F.1, Prop F.2) and a real trainer, :class:`NoisySGD`.

Setting (paper §6.4). One record per step: W_t = psi(W_{t-1}, X_{pi(t)}) + N_t with
psi(w, x) = Pi_K(Pi_K(w) - eta grad f(Pi_K(w), x)), Pi_K the projection on the l2 ball of radius
``radius``, N_t ~ N(0, sigma^2 I_d). For a convex, beta-smooth loss and eta < 2/beta the gradient
step is 1-Lipschitz (Feldman et al. 2018, Prop 18) -- [!] the paper's Lemma F.1 prints eta > 2/beta,
a typo. (puffer projects the noisy iterate before the gradient step, so the gradient is always
taken inside K where the constants below hold; both projections are 1-Lipschitz.)

Secrets s_i^a = {X_i = a} vs s_i^b = {X_i = b}. The per-step shifts are
s_t = eta * min(2 L, C * W_inf(X_{pi(t)}, X'_{pi(t)})), L the gradient bound and C the
data-to-gradient Lipschitz constant on K. Under a Gaussian prior (Prop 6.4),
W_inf(X_t, X'_t) = || Cov(X_t, X_i) Cov(X_i)^{-1} (a - b) ||, see :func:`gaussian_prior_shifts`.

Noise convention ([!] the paper uses both): ``sigma`` is the std of the Gaussian added to the
parameters (paper §6.4; eta appears in the bound), ``noise_multiplier`` nu means std nu * eta
(Lemma F.1 / Feldman et al.; eta cancels). Exactly one of them must be given.

The bound is Thm 5.2 with the optimal allocation; its soundness caveat (iterate and data treated
as independent) is recorded in the guarantee's provenance.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .. import _validate as V
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import Provenance, RPPCurve, round_up
from .allocation import certified_allocation, optimal_allocation
from .pabi import PABI, SOUNDNESS_CAVEAT

__all__ = ["LogisticLoss", "SquaredLoss", "sgd_shifts", "gaussian_prior_shifts", "lemma_f1",
           "feldman_thm23", "NoisySGD", "SGDResult", "SGDAccount", "noisy_sgd_account"]


# ---------------------------------------------------------------------------------------------
# losses: constants on K = {||w|| <= radius} for records clipped to ||x|| <= clip
# ---------------------------------------------------------------------------------------------
class LogisticLoss:
    """log(1 + exp(-y w.x)), y in {-1, +1}, features clipped to ||x||_2 <= ``clip``.

    L = clip (gradient bound), beta = clip^2 / 4 (smoothness),
    C = 1 + clip * radius / 4 (Lipschitz constant of x -> grad f(v, x) on the clipped ball, v in K).

    >>> {k: round(v, 12) for k, v in LogisticLoss(clip=1.0, radius=4.0).constants().items()}
    {'L': 1.0, 'beta': 0.25, 'C': 2.0}
    """

    name = "logistic"

    def __init__(self, *, clip: float = 1.0, radius: float = 10.0):
        self.clip = V.positive("clip", clip)
        self.radius = V.positive("radius", radius)

    def constants(self) -> dict[str, float]:
        B, R = self.clip, self.radius
        return {"L": B, "beta": B * B / 4.0, "C": round_up(1.0 + B * R / 4.0)}

    def labels(self, y: np.ndarray) -> np.ndarray:
        vals = np.unique(y)
        if not np.isin(vals, [-1.0, 1.0]).all() and not np.isin(vals, [0.0, 1.0]).all():
            raise ParameterError("y", f"label values {vals[:5].tolist()}", "binary labels in {0, 1} or {-1, +1}")
        return np.where(y > 0, 1.0, -1.0)

    @staticmethod
    def grad(w: np.ndarray, x: np.ndarray, y: float) -> np.ndarray:
        m = -y * float(x @ w)
        # sigma(m) without overflow
        sg = 1.0 / (1.0 + math.exp(-m)) if m >= 0 else math.exp(m) / (1.0 + math.exp(m))
        return (-y * sg) * x

    @staticmethod
    def predict(w: np.ndarray, X: np.ndarray) -> np.ndarray:
        return np.where(X @ w > 0, 1.0, -1.0)


class SquaredLoss:
    """(w.x - y)^2 / 2 (linear regression), features clipped to ||x|| <= ``clip``, labels to
    |y| <= ``label_bound``.

    L = clip (radius clip + label_bound), beta = clip^2, C = 2 radius clip + label_bound.

    >>> {k: round(v, 12) for k, v in SquaredLoss(clip=1.0, label_bound=1.0, radius=2.0).constants().items()}
    {'L': 3.0, 'beta': 1.0, 'C': 5.0}
    """

    name = "linear"

    def __init__(self, *, clip: float = 1.0, label_bound: float = 1.0, radius: float = 10.0):
        self.clip = V.positive("clip", clip)
        self.label_bound = V.positive("label_bound", label_bound)
        self.radius = V.positive("radius", radius)

    def constants(self) -> dict[str, float]:
        B, Y, R = self.clip, self.label_bound, self.radius
        return {"L": round_up(B * (R * B + Y)), "beta": round_up(B * B), "C": round_up(2.0 * R * B + Y)}

    def labels(self, y: np.ndarray) -> np.ndarray:
        return cast(np.ndarray, np.clip(y, -self.label_bound, self.label_bound))

    @staticmethod
    def grad(w: np.ndarray, x: np.ndarray, y: float) -> np.ndarray:
        return (float(x @ w) - y) * x

    @staticmethod
    def predict(w: np.ndarray, X: np.ndarray) -> np.ndarray:
        return cast(np.ndarray, X @ w)


def _loss(loss: Any, clip: float, radius: float, label_bound: float | None) -> LogisticLoss | SquaredLoss:
    if isinstance(loss, (LogisticLoss, SquaredLoss)):
        return loss
    if loss == "logistic":
        if label_bound is not None:
            raise ParameterError("label_bound", label_bound, "None for the logistic loss (labels are +-1)")
        return LogisticLoss(clip=clip, radius=radius)
    if loss in ("linear", "squared"):
        return SquaredLoss(clip=clip, radius=radius, label_bound=1.0 if label_bound is None else label_bound)
    raise ParameterError("loss", loss, "'logistic', 'linear', or a LogisticLoss / SquaredLoss")


# ---------------------------------------------------------------------------------------------
# shifts
# ---------------------------------------------------------------------------------------------
def sgd_shifts(w_inf: Any, *, eta: float, L: float, C: float) -> np.ndarray:
    """Per-step shifts s_t = eta * min(2 L, C * W_inf(X_t, X'_t)) (paper §6.4), rounded up.

    >>> sgd_shifts([2.0, 0.5, 0.0], eta=0.5, L=1.0, C=1.0).round(12).tolist()
    [1.0, 0.25, 0.0]
    """
    w = V.float_array("w_inf", w_inf, ndim=1)
    if (w < 0).any():
        raise ParameterError("w_inf", float(w[np.argmax(w < 0)]), "W_inf distances >= 0")
    eta = V.positive("eta", eta)
    L = V.positive("L", L)
    C = V.positive("C", C)
    s = eta * np.minimum(2.0 * L, C * w)
    return np.nextafter(np.nextafter(s, np.inf), np.inf) * (s > 0)


def gaussian_prior_shifts(cov: Any, i: int, a: Any, b: Any = None) -> np.ndarray:
    """W_inf(X_t | X_i = a, X_t | X_i = b) for every record t under a Gaussian prior
    (Pierquin et al. 2024, Prop 6.4): ||Cov(X_t, X_i) Cov(X_i)^{-1} (a - b)||_2, and ||a - b|| at t = i
    (same-covariance Gaussian conditionals differ by a translation).

    ``cov``: either the (T m) x (T m) covariance of the stacked records X_1..X_T in R^m (``a``,
    ``b`` vectors of length m), or a T x T matrix R meaning Cov = R (x) Sigma for any Sigma (records
    correlated with coefficients R; then the shift is |R_ti / R_ii| ||a - b|| and ``a`` may be the
    distance ||a - b|| itself with ``b`` None). ``i`` is 0-based.

    >>> gaussian_prior_shifts([[1.0, 0.5], [0.5, 1.0]], 0, 2.0).tolist()
    [2.0, 1.0]
    """
    S = V.float_array("cov", cov, ndim=2)
    if S.shape[0] != S.shape[1]:
        raise ParameterError("cov", f"array of shape {S.shape}", "a square covariance matrix")
    if not np.allclose(S, S.T, rtol=1e-12, atol=0):
        raise ParameterError("cov", "a non-symmetric matrix", "a symmetric covariance matrix")
    av = V.float_array("a", a, ndim=(0, 1))
    bv = None if b is None else V.float_array("b", b, ndim=(0, 1))
    diff = av if bv is None else av - bv
    if bv is not None and av.shape != bv.shape:
        raise ParameterError("b", f"shape {bv.shape}", f"the shape of a {av.shape}")
    m = 1 if diff.ndim == 0 else diff.size
    n = S.shape[0]
    if diff.ndim == 0:
        # Kronecker form R (x) Sigma with a distance
        T = n
        i = V.integer("i", i, lo=0, hi=T - 1)
        if not S[i, i] > 0:
            raise ParameterError("cov", f"R[{i},{i}] = {S[i, i]}", "a positive variance of the secret record")
        d = abs(float(diff))
        out = np.abs(S[:, i] / S[i, i]) * d
        out[i] = d
        return cast(np.ndarray, out)
    if n % m:
        raise ParameterError("cov", f"shape {S.shape}", f"(T*m, T*m) with m = len(a) = {m}")
    T = n // m
    i = V.integer("i", i, lo=0, hi=T - 1)
    blk = slice(i * m, (i + 1) * m)
    Sii = S[blk, blk]
    try:
        u = np.linalg.solve(Sii, diff)
    except np.linalg.LinAlgError as exc:
        raise ParameterError("cov", f"singular Cov(X_{i})", "an invertible covariance of the secret record") from exc
    shift = S[:, blk] @ u                                     # Cov(X_t, X_i) Cov(X_i)^{-1} (a - b)
    out = np.linalg.norm(shift.reshape(T, m), axis=1)
    out[i] = float(np.linalg.norm(diff))
    return cast(np.ndarray, out)


def lemma_f1(alpha: float, L: float, noise_multiplier: float, T: int, i: int) -> float:
    """Pierquin et al. 2024, Lemma F.1 (= Feldman et al. 2018, Thm 23): independent records, noise
    N(0, (noise_multiplier eta)^2 I), the secret in record i (1-based) of T:
    D_alpha <= 2 alpha L^2 / (noise_multiplier^2 (T - i + 1)), rounded up.

    >>> round(lemma_f1(2.0, 1.0, 1.0, 10, 1), 12)
    0.4
    """
    alpha = V.alpha("alpha", alpha, allow_inf=False)
    L = V.positive("L", L)
    nu = V.positive("noise_multiplier", noise_multiplier)
    T = V.integer("T", T, lo=1)
    i = V.integer("i", i, lo=1, hi=T)
    return round_up(2.0 * alpha * L * L / (nu * nu * (T - i + 1)), 6)


def feldman_thm23(alpha: float, L: float, noise_multiplier: float, n: int, i: int) -> float:
    """Feldman, Mironov, Talwar, Thakurta 2018, Thm 23, as stated there: projected noisy SGD over n
    records with N(0, (sigma eta)^2) noise is (alpha, 2 alpha L^2 / (sigma^2 (n - i + 1)))-RDP for
    record i (1-based). Independent restatement of :func:`lemma_f1` (computed from the per-step
    shift 2 eta L spread over the n - i + 1 remaining steps), rounded up."""
    alpha = V.alpha("alpha", alpha, allow_inf=False)
    n = V.integer("n", n, lo=1)
    i = V.integer("i", i, lo=1, hi=n)
    steps = n - i + 1
    per_step = 2.0 * L / steps           # shift / eta, spread evenly
    return round_up(steps * alpha * per_step ** 2 / (2.0 * noise_multiplier ** 2), 8)


# ---------------------------------------------------------------------------------------------
# the accountant
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SGDAccount:
    """The noisy-SGD accountant's result: the worst secret record, its PABI accountant, and the
    RPP curve (max over records, certified)."""

    sigma: float
    eta: float
    constants: dict[str, float]
    worst_record: int
    pabi: PABI = field(repr=False)
    curve: RPPCurve = field(repr=False)

    def epsilon(self, alpha: float) -> float:
        return self.pabi.epsilon(alpha)


def noisy_sgd_account(order: Any, *, eta: float, L: float, C: float, beta: float,
                      sigma: float | None = None, noise_multiplier: float | None = None,
                      correlation: Any = None, diameter: float, label_secret: bool = True,
                      records: Any = None, dim: int = 1) -> SGDAccount:
    """Certified PABI bound of noisy projected SGD, maximised over the secret record.

    ``order``: the record index pi(t) used at each step (0-based, length T). ``correlation``:
    None (independent records, the DP case) or an n x n matrix R of a Gaussian prior
    Cov = R (x) Sigma (Prop 6.4: the secret record's shift propagates to record t as
    |R_ti / R_ii| * ``diameter``). ``diameter``: sup ||a - b|| over the secret values (2 clip for
    clipped features). ``label_secret``: the secret record's own step uses the cap 2 eta L (its
    label may differ too); other records' labels are taken as unaffected. ``records``: the
    secret indices to maximise over (default all). ``dim``: the parameter dimension (noise iid).
    """
    from ..noise import Gaussian

    order = np.asarray(order)
    if order.ndim != 1 or order.size == 0 or not np.issubdtype(order.dtype, np.integer):
        raise ParameterTypeError("order", order, "a non-empty 1-D integer array of record indices")
    eta = V.positive("eta", eta)
    beta = V.positive("beta", beta)
    if not eta < 2.0 / beta:
        raise ParameterError("eta", eta, f"eta < 2/beta = {2.0 / beta!r} (contractive gradient step; "
                                         "the paper's Lemma F.1 prints eta > 2/beta, a typo)")
    if (sigma is None) == (noise_multiplier is None):
        raise ParameterError("sigma", sigma, "exactly one of sigma (std on the parameters, paper §6.4) "
                                             "or noise_multiplier (std = noise_multiplier * eta, Lemma F.1)")
    # the std the trainer draws with is this very float (noise_multiplier * eta), so accounting
    # uses the same number; the Gaussian family's R is certified for it
    sig = V.positive("sigma", sigma) if sigma is not None else \
        V.positive("noise_multiplier", noise_multiplier) * eta
    diameter = V.nonneg("diameter", diameter)
    n = int(order.max()) + 1
    if correlation is None:
        Rm = None
    else:
        Rm = V.float_array("correlation", correlation, ndim=2)
        if Rm.shape[0] != Rm.shape[1] or Rm.shape[0] < n:
            raise ParameterError("correlation", f"shape {Rm.shape}", f"an n x n matrix with n >= {n}")
        n = Rm.shape[0]
    recs = range(n) if records is None else [V.integer("records", r, lo=0, hi=n - 1) for r in records]
    cap = 2.0 * L
    fam = Gaussian(sig)
    noise = fam if dim == 1 else fam.iid(V.integer("dim", dim, lo=1))
    best, best_i = -1.0, -1
    for i in recs:
        if Rm is None:
            w = np.where(order == i, diameter, 0.0)
        else:
            w = np.abs(Rm[order, i] / Rm[i, i]) * diameter
            w[order == i] = diameter
        s = sgd_shifts(w, eta=eta, L=L, C=C)
        if label_secret:
            s[order == i] = round_up(eta * cap)
        b = certified_allocation(s, optimal_allocation(s))
        val = math.fsum((b * b).tolist())      # Gaussian: eps(alpha) = alpha * sum b^2 / (2 sigma^2)
        if val > best:
            best, best_i = val, i
            best_s = s
    acc = PABI(best_s, noise, "optimal")
    prov = Provenance(mechanism="NoisySGD", theorem="Pierquin, Bellet, Tommasi, Boussard 2024, Thm 5.2, "
                      "§6.4 and Prop 6.4 (Gaussian prior)", sensitivity=float(best_s.max()),
                      witness={"secret_record": best_i, "T": int(order.size)},
                      noise=repr(noise), notes=f"max over {len(recs)} secret records; L={L}, C={C}, "
                      f"beta={beta}, eta={eta}; " + SOUNDNESS_CAVEAT)
    curve = RPPCurve.from_function(acc.epsilon, provenance=prov)
    return SGDAccount(sig, eta, {"L": L, "C": C, "beta": beta}, best_i, acc, curve)


# ---------------------------------------------------------------------------------------------
# the trainer
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SGDResult:
    """A trained model: ``w`` (the released parameters, Pi_K(W_T)), the ``guarantee`` (an
    :class:`~puffer.RPPCurve`), and the ``account`` (worst secret record, PABI accountant)."""

    w: np.ndarray = field(repr=False)
    guarantee: RPPCurve = field(repr=False)
    account: SGDAccount = field(repr=False)
    loss: str = ""
    steps: int = 0

    def predict(self, X: Any, *, clip: float | None = None) -> np.ndarray:
        X = V.float_array("X", X, ndim=2)
        f = LogisticLoss.predict if self.loss == "logistic" else SquaredLoss.predict
        return f(self.w, X)


class NoisySGD:
    """Noisy projected SGD (one record per step) with its Renyi Pufferfish guarantee.

    ``loss``: ``"logistic"`` (labels {0,1} or {-1,+1}) or ``"linear"``; ``eta`` the step size
    (< 2/beta, checked); exactly one of ``sigma`` (noise std on the parameters) or
    ``noise_multiplier`` (std = noise_multiplier * eta); ``epochs`` passes over the records in an
    order shuffled per epoch (``shuffle=False`` keeps the data order); ``radius`` of the l2 ball
    K; ``clip`` on the feature norm; ``label_bound`` for linear regression.

    ``fit(X, y, correlation=None, rng=...)`` trains with noise from :func:`puffer.sample`
    (bit-for-bit reproducible for a given ``rng``) and returns an :class:`SGDResult`.
    ``correlation``: None (independent records) or the n x n record-correlation matrix R of a
    Gaussian prior Cov = R (x) Sigma (Prop 6.4).

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(40, 3)); y = (X[:, 0] > 0).astype(float)
    >>> r = NoisySGD(eta=0.5, noise_multiplier=2.0, epochs=2).fit(X, y, rng=1)
    >>> r.w.shape, round(r.guarantee.at(2.0).eps, 6)  # worst record: seen late in the last epoch
    ((3,), 1.015385)
    """

    def __init__(self, loss: Any = "logistic", *, eta: float, sigma: float | None = None,
                 noise_multiplier: float | None = None, epochs: int = 1, radius: float = 10.0,
                 clip: float = 1.0, label_bound: float | None = None, shuffle: bool = True,
                 label_secret: bool = True, progress: bool | None = None):
        self.loss = _loss(loss, clip, radius, label_bound)
        self.eta = V.positive("eta", eta)
        c = self.loss.constants()
        if not self.eta < 2.0 / c["beta"]:
            raise ParameterError("eta", eta, f"eta < 2/beta = {2.0 / c['beta']!r} (contractive step; the "
                                             "paper's Lemma F.1 prints eta > 2/beta, a typo)")
        if (sigma is None) == (noise_multiplier is None):
            raise ParameterError("sigma", sigma, "exactly one of sigma (std on the parameters) or "
                                                 "noise_multiplier (std = noise_multiplier * eta)")
        self.sigma = None if sigma is None else V.positive("sigma", sigma)
        self.noise_multiplier = None if noise_multiplier is None else V.positive("noise_multiplier", noise_multiplier)
        self.epochs = V.integer("epochs", epochs, lo=1)
        if not isinstance(shuffle, bool):
            raise ParameterTypeError("shuffle", shuffle, "a bool")
        self.shuffle = shuffle
        self.label_secret = bool(label_secret)
        self.progress = progress

    @property
    def noise_std(self) -> float:
        if self.sigma is not None:
            return self.sigma
        assert self.noise_multiplier is not None   # the constructor requires exactly one
        return self.noise_multiplier * self.eta

    def _prepare(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        X = V.float_array("X", X, ndim=2)
        y = V.float_array("y", y, ndim=1)
        if y.shape[0] != X.shape[0]:
            raise ParameterError("y", f"{y.shape[0]} labels", f"one label per record ({X.shape[0]})")
        nrm = np.linalg.norm(X, axis=1)
        B = self.loss.clip
        scale = np.where(nrm > B, B / np.where(nrm > 0, nrm, 1.0), 1.0)
        return X * scale[:, None], self.loss.labels(y)

    def account(self, n: int, order: np.ndarray, dim: int, correlation: Any = None,
                records: Any = None) -> SGDAccount:
        c = self.loss.constants()
        return noisy_sgd_account(order, eta=self.eta, L=c["L"], C=c["C"], beta=c["beta"],
                                 sigma=self.sigma, noise_multiplier=self.noise_multiplier,
                                 correlation=correlation, diameter=2.0 * self.loss.clip,
                                 label_secret=self.label_secret, records=records, dim=dim)

    def order(self, n: int, rng: Any) -> tuple[np.ndarray, Any]:
        """The record order pi(t) over all epochs and the noise stream (both from ``rng``)."""
        from ..sampling import as_stream

        stream = as_stream(rng)
        perm_ss, noise_stream = stream.seed_sequence.spawn(1)[0], stream
        g = np.random.default_rng(perm_ss)
        parts = [g.permutation(n) if self.shuffle else np.arange(n) for _ in range(self.epochs)]
        return np.concatenate(parts), noise_stream

    def fit(self, X: Any, y: Any, *, correlation: Any = None, rng: Any = None) -> SGDResult:
        from ..noise import Gaussian
        from ..sampling import sample

        Xc, yc = self._prepare(X, y)
        n, d = Xc.shape
        order, stream = self.order(n, rng)
        T = order.size
        noise = np.asarray(sample(Gaussian(self.noise_std), (T, d), rng=stream))
        R = self.loss.radius
        grad = self.loss.grad
        eta = self.eta
        w = np.zeros(d)
        show = self.progress if self.progress is not None else False
        t0 = time.monotonic()
        try:
            for t in range(T):
                nw = math.sqrt(float(w @ w))
                v = w if nw <= R else w * (R / nw)                  # Pi_K(W_{t-1})
                u = v - eta * grad(v, Xc[order[t]], float(yc[order[t]]))
                nu = math.sqrt(float(u @ u))
                if nu > R:
                    u = u * (R / nu)
                w = u + noise[t]
                if show and t % 5000 == 0 and time.monotonic() - t0 > 1.0:
                    print(f"\rNoisySGD: step {t}/{T}", end="", file=sys.stderr)
        except KeyboardInterrupt:
            if show:
                print("", file=sys.stderr)
            raise
        if show and time.monotonic() - t0 > 1.0:
            print(f"\rNoisySGD: step {T}/{T}", file=sys.stderr)
        nw = math.sqrt(float(w @ w))
        w_rel = w if nw <= R else w * (R / nw)     # post-processing: released model in K
        acc = self.account(n, order, d, correlation)
        return SGDResult(w_rel, acc.curve, acc, self.loss.name, T)

# The paper results implemented here (read by scripts/theorems.py for docs/theorems.md).
from ..refs import Ref  # noqa: E402

REFERENCES = {
    "gaussian_prior_shifts": (Ref("pierquin2024", "Prop 6.4"),),
    "sgd_shifts": (Ref("pierquin2024", "Prop 6.4"),),
    "noisy_sgd_account": (Ref("pierquin2024", "Prop 6.4"), Ref("pierquin2024", "Thm 5.2"),),
    "NoisySGD": (Ref("pierquin2024", "Prop 6.4"),),
    "lemma_f1": (Ref("pierquin2024", "Lemma F.1"), Ref("pierquin2024", "Remark 6.1"),),
    "feldman_thm23": (Ref("feldman2018", "Thm 23"),),
}
