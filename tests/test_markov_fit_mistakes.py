"""Silent mistakes in a fit of Theta from traces (issue 40 item 3): each was accepted before and
gave a wrong Theta, a misleading warning or a bare Python error; each is now refused with a
puffer error naming the parameter (or corrected by an explicit argument), and a long fit
reports progress."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import puffer
from puffer.errors import ParameterError
from puffer.models import fit_markov
from puffer.models.fit import FitWarning
from test_markov_fit import DAY, simulate

pd = pytest.importorskip("pandas")


def _table(x, first_order=0):
    u, t = np.nonzero(np.ones_like(x, bool))
    return pd.DataFrame({"unit": u, "order": t + first_order, "state": x[u, t]})


def test_orders_not_starting_at_phase_zero_are_refused_or_offset():
    """Calendar years 1981.. with period 3: 1981 mod 3 = 1, so every phase would be rotated by
    one. Refused; phase_offset=1981 gives the fit of the same traces numbered from 0."""
    rng = np.random.default_rng(1)
    x = simulate(DAY, 40, 12, rng)
    with pytest.raises(ParameterError, match="phase_offset"):
        fit_markov(_table(x, 1981), T=6, period=3, method="dirichlet")
    a = fit_markov(_table(x, 1981), T=6, period=3, method="dirichlet", phase_offset=1981)
    b = fit_markov(_table(x, 0), T=6, period=3, method="dirichlet")
    assert np.array_equal(a.fit.counts, b.fit.counts) and np.array_equal(a.transitions, b.transitions)
    assert a.fit.phase_offset == 1981 and a.fit.to_dict()["phase_offset"] == 1981
    # the counts of phase 0 are those of the steps 1981 -> 1982, 1984 -> 1985, ... (by hand)
    want = np.zeros((2, 2), np.int64)
    for j in range(0, 11, 3):
        np.add.at(want, (x[:, j], x[:, j + 1]), 1)
    assert np.array_equal(a.fit.counts[0, 0], want)
    # a multiple of the period is phase 0: accepted as before; an offset without a period is an error
    c = fit_markov(_table(x, 3 * 660), T=6, period=3, method="dirichlet")
    assert np.array_equal(c.fit.counts, b.fit.counts)
    with pytest.raises(ParameterError, match="phase_offset"):
        fit_markov(x, T=6, method="dirichlet", phase_offset=1)


def test_transposed_array_is_refused():
    """An orders x units array (12 x 300) of a persistent chain: the stay probability would be
    estimated from neighbouring units. Refused; the right layout and check_layout=False pass."""
    rng = np.random.default_rng(2)
    M = np.array([[[0.91, 0.09], [0.2, 0.8]]])
    x = simulate(M, 300, 12, rng)
    fit_markov(x, T=12, method="dirichlet")
    with pytest.raises(ParameterError, match="traces.T"):
        fit_markov(x.T, T=12, method="dirichlet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        bad = fit_markov(x.T, T=12, method="dirichlet", check_layout=False)
    assert bad.transitions[0, 0, 0] < 0.8            # the wrong fit, made on request only
    # independent units with an i.i.d. state per step, and a periodic chain: never refused
    for seed in range(20):
        r = np.random.default_rng(100 + seed)
        fit_markov((r.random((60, 40)) < 0.3).astype(int), T=12, method="dirichlet")
        fit_markov(simulate(DAY, 60, 30, r), T=6, period=3, method="dirichlet")


def test_fit_records_its_state_column_and_the_release_checks_it(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    x = simulate(DAY, 30, 6, rng)
    df = _table(x)
    df["other"] = 1 - df["state"]
    fw = fit_markov(df, T=6, period=3, method="dirichlet")
    assert fw.fit.column == "state" and fw.fit.to_dict()["column"] == "state"
    assert fit_markov(x, T=6, period=3, method="dirichlet").fit.column is None
    pq.write_table(pa.Table.from_pandas(df), tmp_path / "t.parquet")
    puffer.io.keygen(tmp_path / "k.key")
    m = puffer.mechanisms.Wasserstein(fw, eps=1.0)
    with pytest.raises(ParameterError, match="fitted on the states of column 'state'"):
        puffer.io.noise_file(tmp_path / "t.parquet", tmp_path / "o.parquet", ["other"], m, key=tmp_path / "k.key",
                             unit="unit", order="order", allow_fit_on_release=True)
    e = puffer.io.noise_file(tmp_path / "t.parquet", tmp_path / "o.parquet", ["state"], m, key=tmp_path / "k.key",
                             unit="unit", order="order", allow_fit_on_release=True)
    assert e["fit"]["column"] == "state"


def test_period_longer_than_the_chain_is_refused_and_unused_phases_do_not_warn():
    rng = np.random.default_rng(4)
    x = simulate(DAY, 30, 12, rng)
    with pytest.raises(ParameterError, match="period"):
        fit_markov(x, T=2, period=3, method="dirichlet")
    # T = 3: the chain steps through phases 0 and 1; phase 2 has no transitions and no warning
    y = x[:, :3]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitWarning)
        fw = fit_markov(y, T=3, period=3, method="dirichlet", min_count=5)
    assert fw.fit.counts[0, 2].sum() == 0 and fw.fit.warnings == ()


def test_columns_in_the_wrong_order_get_a_hint():
    rng = np.random.default_rng(5)
    df = _table(simulate(DAY, 20, 6, rng))
    with pytest.raises(ParameterError, match=r"columns=\('state', 'order', 'unit'\).*in that order"):
        fit_markov(df, T=6, method="dirichlet", columns=("state", "order", "unit"))


def test_infinite_states_and_missing_unit_ids_are_refused():
    rng = np.random.default_rng(6)
    x = simulate(DAY, 20, 6, rng).astype(float)
    x[3, 2] = np.inf
    with pytest.raises(ParameterError, match="finite states"):
        fit_markov(x, T=6, method="dirichlet")
    x[4, 1] = -np.inf
    with pytest.raises(ParameterError, match="finite states"):
        fit_markov(x, T=6, method="dirichlet")
    df = _table(simulate(DAY, 20, 6, rng)).astype({"state": float})
    df.loc[5, "state"] = np.inf
    df.loc[7, "state"] = -np.inf
    with pytest.raises(ParameterError, match="finite states"):
        fit_markov(df, T=6, method="dirichlet")
    obj = _table(simulate(DAY, 20, 6, rng)).astype({"state": object})
    obj.loc[5, "state"] = float("inf")
    with pytest.raises(ParameterError, match="finite states"):
        fit_markov(obj, T=6, method="dirichlet")
    df = _table(simulate(DAY, 20, 6, rng)).astype({"unit": float})
    df.loc[9, "unit"] = np.nan
    with pytest.raises(ParameterError, match="unit id on every record"):
        fit_markov(df, T=6, method="dirichlet")
    names = _table(simulate(DAY, 20, 6, rng)).astype({"unit": object})
    names.loc[9, "unit"] = None
    with pytest.raises(ParameterError, match="unit id on every record"):
        fit_markov(names, T=6, method="dirichlet")


def test_progress_is_reported():
    rng = np.random.default_rng(7)
    x = simulate(DAY, 40, 12, rng)
    seen: list[tuple[int, int]] = []
    fit_markov(x, T=6, period=3, n_boot=450, seed=1, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 452) and seen[-1] == (452, 452) and len(seen) >= 4
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    seen.clear()
    fit_markov(x, T=6, period=3, method="dirichlet", progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (2, 2)
    with pytest.raises(ParameterError, match="progress"):
        fit_markov(x, T=6, method="dirichlet", progress="yes")
