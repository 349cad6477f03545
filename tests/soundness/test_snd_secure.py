"""Issue 9 items 1 and 10: secure mode's lattice never depends on the data; clear errors."""
import math

import numpy as np
import pytest

import puffer
from puffer import secure
from puffer.errors import ParameterError, PufferError

LAP = ("laplace", {"b": 1.0})


def _odd_fraction(y, g):
    k = y / g
    assert np.all(k == np.round(k)), "outputs must be lattice points"
    return float(np.mean(np.mod(k, 2) == 1))


@pytest.mark.parametrize("e", [10, 30, 42, 50])
def test_neighbours_across_power_of_two_share_the_output_set(e):
    # Mironov-style distinguisher: before the fix the lattice was coarsened from max|x|, so
    # x = 2^e + 1/2 produced no odd multiples of the finer lattice while 2^e - 1/2 produced ~50 %.
    # Now both releases use the lattice fixed by (sensitivity, noise, declared bound): the same
    # granularity, and both have odd multiples (P(miss) = 2^-2000 per side: no false alarm).
    n = 2000
    outs, plans = [], []
    for x in (2.0**e - 0.5, 2.0**e + 0.5):
        y, plan = secure.secure_add_noise(np.full(n, x), LAP, sensitivity=1.0, norm="coordinate",
                                          bound=2.0 ** (e + 1), return_plan=True)
        outs.append(y)
        plans.append(plan)
    assert plans[0] == plans[1]
    g = plans[0].granularity
    for y in outs:
        assert 0.3 < _odd_fraction(y, g) < 0.7


def test_plan_is_a_function_of_declarations_only():
    # the same declared bound gives the same plan whatever the values (no data argument at all)
    p1 = secure.secure_plan(LAP, 5, sensitivity=1.0, bound=1e6)
    p2 = secure.secure_plan(LAP, 5, sensitivity=1.0, bound=1e6)
    assert p1 == p2 and p1.bound == 1e6
    assert p1.bound <= 2.0 ** (52 + p1.g_exp)


def test_values_outside_the_bound_are_rejected_not_coarsened():
    # default bound = 2^52 g: [2^42 + 0.5] with g = 2^-10 is outside it -> refused
    with pytest.raises(ParameterError, match="bound"):
        puffer.add_noise([2.0**42 + 0.5], puffer.Laplace(1.0), sensitivity=1.0, secure=True)
    y = puffer.add_noise([2.0**42 - 0.5], puffer.Laplace(1.0), sensitivity=1.0, secure=True)
    assert np.isfinite(y).all()
    with pytest.raises(ParameterError, match="bound"):
        puffer.add_noise([3.0, -11.0], LAP, sensitivity=1.0, secure=True, bound=10.0)
    with pytest.raises(ParameterError, match="bound"):
        puffer.add_noise([3.0], LAP, sensitivity=1.0, secure=True, bound=2.0**60, granularity=2**-10)
    with pytest.raises(ParameterError, match="bound"):
        puffer.add_noise([3.0], LAP, bound=10.0)  # bound without secure=True


@pytest.mark.parametrize("b", [0.05, 0.3, 1e-3])
def test_laplace_below_one_lattice_unit_works_or_names_the_parameter(b):
    # item 10: b = 0.05 with granularity 1 raised a pybind TypeError, b = 0.3 an internal error
    y = puffer.add_noise(np.zeros(100), ("laplace", {"b": b}), sensitivity=1.0, granularity=1.0,
                         norm="coordinate", secure=True)
    assert np.all(y == np.round(y))
    with pytest.raises(ParameterError, match="'b'"):
        puffer.add_noise(np.zeros(3), ("laplace", {"b": 1e-9}), sensitivity=1.0, granularity=1.0, secure=True)
    with pytest.raises(ParameterError, match="'sigma'"):
        puffer.add_noise(np.zeros(3), ("gaussian", {"sigma": 1e-9}), sensitivity=1.0, granularity=1.0, secure=True)


BAD = [
    dict(values=[1j], noise=LAP, sensitivity=1.0),
    dict(values=np.array([1 + 2j]), noise=LAP, sensitivity=1.0),
    dict(values=["a"], noise=LAP, sensitivity=1.0),
    dict(values=[10**400], noise=LAP, sensitivity=1.0),
    dict(values=[1.0], noise=LAP, sensitivity=1e308),
    dict(values=[1.0], noise=LAP, sensitivity=1e-308),
    dict(values=[1.0], noise=("laplace", {"b": 1e308}), sensitivity=1e-300),
    dict(values=[1.0], noise=("gaussian", {"sigma": 1e300}), sensitivity=1.0),
    dict(values=[1.0], noise=LAP, sensitivity=1.0, granularity=2.0**-1074),
    dict(values=[1.0], noise=LAP, sensitivity=1.0, granularity=3.0),
    dict(values=[1.0], noise=LAP, sensitivity=1.0, bound=math.nan),
    dict(values=[1.0], noise=LAP, sensitivity=1.0, bound=-1.0),
    dict(values=[1.0], noise=LAP, sensitivity=1.0, norm=3),
    dict(values=[1.0], noise=LAP, sensitivity=1.0, threads=10**30),
    dict(values=[1.0], noise=("cauchy", {"gamma": 1.0}), sensitivity=1.0),
    dict(values=[1.0], noise=LAP, sensitivity="1"),
    dict(values=[1.0], noise=LAP, sensitivity=None),
]


@pytest.mark.parametrize("kw", BAD)
def test_secure_bad_input_gives_puffer_errors(kw):
    # fuzz-found escapes (TypeError, OverflowError) of secure add_noise, as a class
    values = kw.pop("values")
    noise = kw.pop("noise")
    with pytest.raises(PufferError):
        puffer.add_noise(values, noise, secure=True, **kw)


def test_secure_random_fuzz_only_puffer_errors():
    rng = np.random.default_rng(9)
    pool = [0.0, -1.0, 1e-320, 1e-300, 1e-12, 0.5, 1.0, 3.0, 2.0**40, 1e200, 1e308, math.inf, math.nan]
    for _ in range(400):
        kw = {}
        fam = rng.choice(["laplace", "gaussian"])
        noise = (fam, {"b" if fam == "laplace" else "sigma": float(rng.choice(pool))})
        kw["sensitivity"] = float(rng.choice(pool))
        if rng.random() < 0.5:
            kw["granularity"] = float(2.0 ** int(rng.integers(-1100, 1100))) if rng.random() < 0.8 else 0.75
        if rng.random() < 0.5:
            kw["bound"] = float(rng.choice(pool))
        kw["norm"] = [None, "l1", "l2", "coordinate"][int(rng.integers(4))]
        vals = rng.choice(pool, size=int(rng.integers(0, 4)))
        try:
            y = puffer.add_noise(vals, noise, secure=True, **kw)
        except PufferError:
            continue
        assert np.isfinite(y).all()
