"""Private logistic regression on correlated records (Pierquin et al. 2024, Section 6.4).

The Wisconsin breast-cancer data (569 patients, shipped inside scikit-learn) are trained with
noisy projected SGD. Records are declared correlated through a Gaussian prior whose record
correlation decays with the distance in the file order (e.g. patients seen in the same clinic
week), Cov = R (x) Sigma with R_ij = rho^|i - j|. The guarantee is the (alpha, eps)-RPP curve of
puffer.iteration (amplification by iteration), compared with independent records, with
non-private training, and with group-DP accounting: since every pair of records is correlated
(rho^|i-j| > 0), group privacy must protect the whole training set as one group, which is the
accountant with full correlation (R = all ones: every step's record may differ, paper §6.4's
"no better than group privacy" extreme). Same trained model, three accountings. Run: python examples/noisy_sgd_breast_cancer.py  (well under a minute).
"""
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from puffer.iteration import NoisySGD


def main() -> None:
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X = X / np.linalg.norm(X, axis=1).max()          # feature norm <= 1 (the clip)
    n = len(y)
    rng = np.random.default_rng(0)
    test = rng.random(n) < 0.25
    Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
    m = len(ytr)
    idx = np.arange(m)
    R = 0.3 ** np.abs(idx[:, None] - idx[None, :])  # record correlation of the Gaussian prior

    base = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    print(f"non-private logistic regression: test accuracy {base.score(Xte, yte):.3f}")
    for name, corr in (("independent records", None), ("correlated records (rho = 0.3)", R)):
        sgd = NoisySGD("logistic", eta=0.5, noise_multiplier=1.0, epochs=5, radius=10.0)
        res = sgd.fit(Xtr, ytr, correlation=corr, rng=2026)
        acc = float(np.mean(((Xte @ res.w) > 0).astype(float) == yte))
        g = res.guarantee
        print(f"noisy SGD, {name}: test accuracy {acc:.3f}; guarantee "
              f"({2.0:g}, {g.at(2.0).eps:.4g})-RPP, ({8.0:g}, {g.at(8.0).eps:.4g})-RPP, "
              f"(eps, 1e-5)-PP eps = {g.to_pp(1e-5).eps:.4g}")
    # group DP: the same noisy SGD run (same sigma, same order), accounted with one group of size m
    order, _ = sgd.order(m, 2026)
    grp = sgd.account(m, order, X.shape[1], correlation=np.ones((m, m)), records=[0]).curve
    print(f"group-DP accounting of the same run (one group of {m} records): "
          f"({2.0:g}, {grp.at(2.0).eps:.4g})-RPP, ({8.0:g}, {grp.at(8.0).eps:.4g})-RPP, "
          f"(eps, 1e-5)-PP eps = {grp.to_pp(1e-5).eps:.4g}")


if __name__ == "__main__":
    main()
