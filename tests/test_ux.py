"""Issue 22 section 4: answers a new user found silent or misleading. Each test failed before
its fix (the issue's reproduction)."""
from __future__ import annotations

import pytest

import puffer
from puffer.errors import ParameterError


def test_markov_w_inf_refuses_a_norm_like_the_base_class():
    fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5)
    assert fw.w_inf().value == 5.0
    for norm in (1, 2, 3, float("inf")):
        with pytest.raises(ParameterError, match="norm"):
            fw.w_inf(norm=norm)
    # the base class gives the same answer
    with pytest.raises(ParameterError, match="1-D query"):
        puffer.models.correlated_pair().w_inf(norm=3)


def test_general_wasserstein_never_ignores_a_given_scale():
    from puffer.mechanisms import ApproximateWasserstein, GeneralWasserstein
    from puffer.noise import Gaussian, GenGaussian, Laplace

    fw = puffer.models.correlated_pair()           # Delta_G = 2
    # a scale and a target: the target would replace the scale silently -> refused, naming both paths
    with pytest.raises(ParameterError, match=r"5\.0 would be ignored.*leave out eps"):
        GeneralWasserstein(fw, Gaussian(5.0), eps=1.0, delta=1e-5)
    with pytest.raises(ParameterError, match="would be ignored"):
        GeneralWasserstein(fw, Gaussian(5.0), alpha=2.0, eps=1.0)
    with pytest.raises(ParameterError, match="would be ignored"):
        ApproximateWasserstein(fw, Laplace(3.0), 1e-3, eps=1.0)
    # the "given sigma, what eps" path: R_2 = alpha Delta^2 / (2 sigma^2) = 2 * 4 / 50, never below
    g = GeneralWasserstein(fw, Gaussian(5.0))
    assert g.noise.scale == 5.0
    assert 0.16 <= g.guarantee.at(2.0).eps <= 0.16 * (1 + 1e-12)
    # families (class, name, unit instance with shape parameters) still calibrate
    for fam in (Gaussian, "gaussian", Gaussian(1.0)):
        m = GeneralWasserstein(fw, fam, alpha=2.0, eps=1.0)
        assert m.noise.scale == pytest.approx(2.0, rel=1e-9)
    m = GeneralWasserstein(fw, GenGaussian(1.5, 1.0), alpha=2.0, eps=1.0)
    assert m.noise.beta == 1.5 and m.epsilon(2.0) <= 1.0


def _relabel(fw, tag):
    return puffer.Framework.from_conditionals(
        {th: {(tag, s): fw.conditional(th, s) for s in fw.secrets} for th in fw.thetas},
        [((tag, a), (tag, b)) for a, b in fw.pairs])


def test_compose_parallel_keeps_pp_and_mixes_it_soundly():
    fa = _relabel(puffer.models.correlated_pair(0.5, 0.3), "a")
    fb = _relabel(puffer.models.correlated_pair(0.4, 0.2), "b")
    out = puffer.compose_parallel([(puffer.PP(0.3), fa), (puffer.PP(0.9), fb)], independent=True)
    assert type(out) is puffer.PP and out.eps == 0.9 and out.delta == 0.0
    assert any(r.item == "Prop E.1" for r in out.provenance.refs)
    # eps-PP is (alpha, eps)-RPP at every order (D_alpha <= D_inf): mixed parts compose at alpha
    mixed = puffer.compose_parallel([(puffer.PP(0.9), fa), (puffer.RPP(2.0, 0.5), fb)], independent=True)
    assert mixed == puffer.RPP(2.0, 0.9)
    curve = puffer.compose_parallel([(puffer.PP(0.2), fa), (puffer.RPPCurve((2.0, 4.0), (0.1, 0.4)), fb)],
                                    independent=True)
    assert curve.alphas == (2.0, 4.0) and curve.eps == (0.2, 0.4)


def test_compose_parallel_disjointness_cannot_be_renamed_away():
    fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=6)
    renamed = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=6, states=["off", "on"])
    g = puffer.RPP(2.0, 0.5)
    with pytest.raises(ParameterError, match="same data twice"):
        puffer.compose_parallel([(g, fw), (g, renamed)], independent=True)
    # a generic framework with its secrets relabelled, and prior labels renamed
    fa = puffer.models.correlated_pair(0.5, 0.3)
    with pytest.raises(ParameterError, match="same data twice"):
        puffer.compose_parallel([(g, _relabel(fa, "x")), (g, _relabel(fa, "y"))], independent=True)
    relab = puffer.Framework.from_conditionals(
        {("prior", th): {("z", s): fa.conditional(th, s) for s in fa.secrets} for th in fa.thetas},
        [(("z", a), ("z", b)) for a, b in fa.pairs])
    with pytest.raises(ParameterError, match="same data twice"):
        puffer.compose_parallel([(g, _relabel(fa, "x")), (g, relab)], independent=True)
    # different data with one model: named explicitly, accepted
    out = puffer.compose_parallel({"household 12": (g, fw), "household 31": (puffer.RPP(2.0, 0.7), renamed)},
                                  independent=True)
    assert out == puffer.RPP(2.0, 0.7) and "household 31" in out.provenance.notes
    # different models pass unnamed
    other = puffer.models.markov_chain([[0.8, 0.2], [0.2, 0.8]], T=6, states=["off", "on"])
    assert puffer.compose_parallel([(g, fw), (g, other)], independent=True) == g


_SMALL_CHAIN = """name = "small chain"
[model]
kind = "markov_chain"
T = 6
trans = [[0.9, 0.1], [0.2, 0.8]]
[target]
eps = 1.0
"""


def test_audit_file_lists_every_row_of_run_file(tmp_path, capsys):
    import json

    from puffer import cli

    f = tmp_path / "chain.toml"
    f.write_text(_SMALL_CHAIN)
    assert cli.main(["run", str(f), "--json"]) == 0
    run_rows = [r["label"] for r in json.loads(capsys.readouterr().out)["rows"]]
    assert any("Markov quilt" in lab for lab in run_rows)
    assert cli.main(["audit", str(f), "--n", "3000", "--seed", "1", "--json"]) == 0
    audit_rows = [r["label"] for r in json.loads(capsys.readouterr().out)["reports"]]
    assert audit_rows == run_rows


def test_demo_plot_without_matplotlib_exits_3_at_once(tmp_path, monkeypatch, capsys):
    import sys

    from puffer import cli

    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import matplotlib -> ImportError

    def never(*a, **k):
        raise AssertionError("the demo was computed before the missing matplotlib was noticed")
    monkeypatch.setattr(cli, "run", never)
    assert cli.main(["demo", "--plot", str(tmp_path / "figs")]) == cli.EXIT_INPUT
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "puffer-privacy[plot]" in err and "Traceback" not in err
    assert not (tmp_path / "figs").exists()


def _fresh(code: str) -> str:
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True, timeout=900).stdout   # a hang guard: seconds alone


def test_version_and_help_import_nothing_numerical():
    # the ~2 s of `puffer --version` were numpy + scipy.stats imported to build the parser
    code = ("import sys\nfrom puffer import cli\n"
            "for argv in (['--version'], ['--help'], ['demo', '--help'], ['run', '--help']):\n"
            "    try:\n        cli.main(argv)\n    except SystemExit as e:\n        assert e.code == 0, e.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy', 'puffer._core')))")
    out = _fresh(code)
    assert "puffer " in out and "usage: puffer" in out
    assert out.strip().splitlines()[-1] == "[]"


def test_lazy_subcommand_help_lines_match_their_modules():
    import argparse
    import importlib

    from puffer import cli

    for name, (module, help_line) in cli._SUBCOMMANDS.items():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).add_parser(sub)
        assert [a.help for a in sub._choices_actions if a.dest == name] == [help_line], name
    # the full parser (no argv) and the lazy one list the same subcommands
    full = cli._parser()._subparsers._group_actions[0].choices
    lazy = cli._parser(["--version"])._subparsers._group_actions[0].choices
    assert list(full) == list(lazy)


def test_every_subcommand_argument_has_a_description():
    # `puffer run --help` listed its `file` argument with no description. Hidden arguments
    # (help=argparse.SUPPRESS: `puffer noise --seed`, refused with an explanation) are on purpose.
    import argparse

    from puffer import cli

    missing, seen = [], []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for a in parser._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                continue
            if isinstance(a, argparse._SubParsersAction):
                helps = {c.dest: c.help for c in a._choices_actions}
                for name, sub in a.choices.items():
                    if not (helps.get(name) or "").strip():
                        missing.append(f"{path} {name} (the subcommand)")
                    walk(sub, f"{path} {name}")
                continue
            seen.append(f"{path} {a.option_strings or a.dest}")
            if a.help is None or not str(a.help).strip():
                missing.append(f"{path} {'/'.join(a.option_strings) or a.dest}")

    walk(cli._parser(), "puffer")
    assert missing == []
    assert "puffer run file" in seen and any(s.startswith("puffer ledger verify") for s in seen)


def test_config_is_reachable_lazily_from_import_puffer():
    out = _fresh("import sys, puffer\nassert 'puffer.config' not in sys.modules\n"
                 "print(puffer.config.load_config.__name__, 'config' in dir(puffer))")
    assert out.split() == ["load_config", "True"]


def test_error_messages_show_the_type_and_plain_values():
    import numpy as np

    from puffer.config import validate_config
    from puffer.errors import ParameterTypeError

    doc = {"model": {"kind": "markov_chain", "T": "24", "trans": [[0.9, 0.1], [0.2, 0.8]]}, "target": {"eps": 1}}
    with pytest.raises(ParameterError) as e:
        validate_config(doc)
    assert "'model.T' = '24' (type str): expected an integer" in str(e.value)
    with pytest.raises(ParameterTypeError) as e:
        validate_config({"model": {"kind": "correlated_pair"}, "target": {"eps": "1"}})
    assert "= '1' (type str)" in str(e.value)
    with pytest.raises(ParameterError) as e:
        puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=4, init="stat")
    assert "= 'stat':" in str(e.value)
    # numpy-2 scalar reprs never reach a message, in the value or in the text
    for f in (lambda: puffer.PP(np.float64(-0.3)), lambda: puffer.models.independent_users([np.float64(1.3)]),
              lambda: puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=np.int64(0))):
        with pytest.raises(ParameterError) as e:
            f()
        assert "np." not in str(e.value), str(e.value)
    e2 = ParameterError("x", [np.float64(0.3), np.True_], f"less than {np.float32(0.5)!r}")
    assert str(e2) == "parameter 'x' = [0.3, True]: expected less than 0.5"
    # descriptions stay as written; a name holding quotes is not quoted again
    assert str(ParameterError("atoms", "array of shape (3,)", "x")) == "parameter 'atoms' = array of shape (3,): expected x"
    assert str(ParameterTypeError("column 'a'", "string", "a number column")) == \
        "parameter column 'a' = 'string' (type str): expected a number column"


def test_rounded_estimated_matrices_have_an_explicit_normalize():
    import numpy as np

    from puffer.config import build_framework, validate_config

    est = [[0.899, 0.1], [0.2, 0.8]]              # rounded estimate: row 0 sums to 0.999
    with pytest.raises(ParameterError, match="normalize=TOL"):   # refused, with the way forward named
        puffer.models.markov_chain(est, T=5)
    fw = puffer.models.markov_chain(est, T=5, normalize=1e-3)
    assert fw.normalization["tolerance"] == 1e-3
    assert fw.normalization["max_row_error"] == pytest.approx(1e-3, rel=1e-9)
    np.testing.assert_array_equal(fw.transitions[0, 0], [0.899 / 0.999, 0.1 / 0.999])
    assert "renormalised within 0.001" in fw.name
    # Delta_G of the renormalised chain (its laws are what the guarantee is about)
    assert fw.w_inf().value == puffer.models.markov_chain(np.array(est) / np.sum(est, axis=1, keepdims=True),
                                                          T=5).w_inf().value
    with pytest.raises(ParameterError, match="stated normalize"):    # beyond the stated tolerance
        puffer.models.markov_chain([[0.89, 0.1], [0.2, 0.8]], T=5, normalize=1e-3)
    with pytest.raises(ParameterError, match="normalize"):
        puffer.models.markov_chain(est, T=5, normalize=0.5)         # not a rounding tolerance
    with pytest.raises(puffer.ParameterTypeError, match="normalize"):
        puffer.models.markov_chain(est, T=5, normalize=True)
    assert puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=5).normalization is None
    # the config file takes the same key
    doc = {"model": {"kind": "markov_chain", "T": 5, "trans": est, "normalize": 1e-3}, "target": {"eps": 1.0}}
    assert build_framework(validate_config(doc)["model"]).normalization["tolerance"] == 1e-3
    with pytest.raises(ParameterError, match="model.normalize"):
        validate_config({**doc, "model": {**doc["model"], "normalize": 0.2}})


def test_memory_refusals_point_to_what_works(monkeypatch):
    from puffer import models

    # T = 20000 with half of what one worker needs -> w_inf is refused, and so are the stored
    # laws; neither message may send the user to w_inf
    fw = puffer.models.markov_chain([[0.9, 0.1], [0.2, 0.8]], T=20000)
    monkeypatch.setattr(models, "_available_bytes", lambda: int(fw._w_inf_bytes(1, 1) / 2))
    with pytest.raises(ParameterError) as e:
        fw.w_inf(threads=1)
    msg = str(e.value)
    assert "which stores no law" not in msg.split("MarkovQuilt")[0]
    assert "shorter chain" in msg and "MarkovQuilt" in msg and "fw.cost()" in msg
    with pytest.raises(ParameterError) as e:
        fw.conditional(0, "X0=0")
    assert "w_inf() would not fit either" in str(e.value) and "MarkovQuilt" in str(e.value)
    assert puffer.mechanisms.MarkovQuilt(fw, eps=1.0).noise.scale > 0      # what the message offers works
    # 4 priors, T = 1500: one worker fits, two do not -> the refusal names the threads that fit
    fw4 = puffer.models.markov_chain([[[0.9, 0.1], [0.2, 0.8]]] * 4, T=1500)
    one, two = fw4._w_inf_bytes(threads=1), fw4._w_inf_bytes(threads=2)
    monkeypatch.setattr(models, "_available_bytes", lambda: int((one + two) / 2))
    with pytest.raises(ParameterError, match="threads=1 or block=1"):
        fw4.w_inf(threads=2)
    # stored laws refused while w_inf fits: then (and only then) w_inf is offered
    monkeypatch.setattr(models, "_available_bytes", lambda: int(two * 1.01))
    fw4b = puffer.models.markov_chain([[[0.9, 0.1], [0.2, 0.8]]] * 4, T=1500, threads=2)
    with pytest.raises(ParameterError, match=r"store no law and fit \(w_inf"):
        fw4b.conditional(0, "X0=0")


def test_releases_keep_pandas_and_refuse_bool_and_inexact_integers():
    import numpy as np
    import pandas as pd

    from puffer.errors import ParameterTypeError
    from puffer.noise import Laplace

    m = puffer.mechanisms.Wasserstein(puffer.models.correlated_pair(), eps=1.0)
    zero = puffer.mechanisms.Wasserstein(puffer.Framework.from_conditionals(
        {0: {"a": puffer.DiscreteDist([1.0], [1.0]), "b": puffer.DiscreteDist([1.0], [1.0])}}, [("a", "b")]), eps=1.0)
    assert zero.noise is None
    s = pd.Series([31.0, 18.0, 40.0], index=pd.Index(["mon", "tue", "wed"], name="day"), name="kwh")
    for r in (puffer.add_noise(s, Laplace(1.0), rng=1), m.release(s, rng=1), zero.release(s, allow_unnoised=True),
              puffer.add_noise(s, Laplace(1.0), secure=True, sensitivity=1.0)):
        assert isinstance(r, pd.Series) and r.name == "kwh" and r.index.equals(s.index)
    # the same noise as the bare array (the container changes nothing else)
    np.testing.assert_array_equal(m.release(s, rng=1).to_numpy(), m.release(s.to_numpy(), rng=1))
    ints = pd.Series([3, 4], index=[10, 20], name="n")
    r = puffer.add_noise(ints, Laplace(1.0), rng=2)
    assert list(r.index) == [10, 20] and r.name == "n" and r.dtype == np.float64
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}, index=["x", "y"])
    rd = puffer.add_noise(df, Laplace(1.0), rng=3)
    assert isinstance(rd, pd.DataFrame) and list(rd.columns) == ["a", "b"] and list(rd.index) == ["x", "y"]
    # bool values are no counts: refused everywhere (array, list mixing bools, Series, scalar)
    for v in (np.array([True, False]), [True, 1.0], [[1.0], [False]], pd.Series([True, False]), True):
        for f in (lambda: puffer.add_noise(v, Laplace(1.0), rng=1), lambda: m.release(v, rng=1),
                  lambda: zero.release(v, allow_unnoised=True), lambda: puffer.add_noise(v, Laplace(1.0), secure=True, sensitivity=1.0)):
            with pytest.raises(ParameterTypeError, match="bool"):
                f()
    # integers float64 cannot hold exactly: refused; exact large ones (2^53, 2^60) pass
    for v in (np.array([2**53 + 1]), [2**70 + 1], np.array([2**63 - 1], dtype=np.int64),
              np.array([2**64 - 1], dtype=np.uint64), pd.Series([-(2**53) - 1])):
        for f in (lambda: puffer.add_noise(v, Laplace(1.0), rng=1), lambda: m.release(v, rng=1), lambda: zero.release(v, allow_unnoised=True)):
            with pytest.raises(ParameterError, match="float64 holds exactly"):
                f()
    assert zero.release(np.array([2**53, 2**60]), allow_unnoised=True)[1] == 2.0**60


def test_fuzz_findings_are_puffer_errors():
    import numpy as np

    from puffer.errors import ParameterTypeError, PufferError

    # secure mode with b or sigma near the double range, or a subnormal sensitivity
    for noise, kw in ((("laplace", {"b": 1e308}), {}), (("laplace", {"b": 1e300}), {"granularity": 2.0 ** -10}),
                      (("gaussian", {"sigma": 1e300}), {}), (("laplace", {"b": 5e-324}), {"sensitivity": 5e-324}),
                      (("laplace", {"b": 5e-324}), {"sensitivity": 5e-324, "granularity": 2.0 ** -10}),
                      (("laplace", {"b": 1e-300}), {"sensitivity": 1e-300, "bound": 1e300})):
        with pytest.raises(PufferError):
            puffer.add_noise(np.array([1.0]), noise, secure=True, **{"sensitivity": 1.0, **kw})
    # DiscreteDist.from_dict given a number, a string, a list, or keys missing / unknown
    for d in (3, "ab", "", [1, 2], None, {"atoms": [1.0]}, {"atoms": [1.0], "probs": [1.0], "x": 1}):
        with pytest.raises(PufferError, match="'d'"):
            puffer.DiscreteDist.from_dict(d)
    law = puffer.DiscreteDist([0.0, 1.0], ["1/3", "2/3"])
    assert puffer.DiscreteDist.from_dict(law.to_dict()) == law
    # normalize= and exact= are flags: an array (numpy's ambiguous truth value) or 0/1 is refused
    for bad in (np.array([1.0, 2.0]), 1, "yes"):
        with pytest.raises(ParameterTypeError, match="normalize"):
            puffer.DiscreteDist([1.0, 2.0], [1.0, 2.0], normalize=bad)
        with pytest.raises(ParameterTypeError, match="exact"):
            puffer.DiscreteDist([1.0, 2.0], [0.5, 0.5], exact=bad)
    assert puffer.DiscreteDist([1.0, 2.0], [1.0, 3.0], normalize=np.True_).probs.tolist() == [0.25, 0.75]


def test_type_errors_name_the_value_not_its_type_name():
    """Issue 30: ``ParameterTypeError(name, type(x).__name__, ...)`` printed the type's name as the
    value, typed as a string ("parameter 'client' = 'NoneType' (type str)"). The messages name the
    value and its type; a key is described, never shown; no call site passes a type's name."""
    import pathlib
    import re

    import numpy as np

    from puffer.errors import ParameterTypeError
    from puffer.partial.casestudy import run_case_study
    from puffer.sampling import KeyedStream

    with pytest.raises(ParameterTypeError, match=r"^parameter 'data' = None \(type NoneType\): expected a CaseData"):
        run_case_study(None)
    with pytest.raises(ParameterTypeError) as err:
        KeyedStream("a secret key string of 32 chars!")
    assert str(err.value).startswith("parameter 'key' = a str (not shown): expected 32 secret bytes")
    assert "secret key string" not in str(err.value)
    assert str(ParameterTypeError("df", np.arange(6).reshape(2, 3), "a frame")) == \
        "parameter 'df' = array([[0, 1, 2], [3, 4, 5]]) (type ndarray): expected a frame"
    src = pathlib.Path(puffer.__file__).parent
    bad = [f"{p.relative_to(src)}:{n}" for p in src.rglob("*.py")
           for n, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"Parameter(Type)?Error\(\s*\S+,\s*type\([^)]*\)\.__name__", line)]
    assert not bad, bad
