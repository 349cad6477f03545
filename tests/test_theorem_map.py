"""scripts/theorems.py --check fails when a public module cites a paper result without a Ref, when
a computational result of the five papers is cited nowhere (the issue-25 completeness rule), when a
paper command only mentions a result's number instead of printing a row labelled with it, and when
a cited result's only test refers to another object of the same bare name."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# scripts/theorems.py reads the package sources: scripts/wheel.sh runs the suite against the
# installed wheel from a folder without them, where this check does not apply
pytestmark = pytest.mark.skipif(not (ROOT / "scripts" / "theorems.py").is_file()
                                or not (ROOT / "python" / "puffer").is_dir(), reason="needs the source checkout")


def _load():
    spec = importlib.util.spec_from_file_location("theorems_script", ROOT / "scripts" / "theorems.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_uncited_public_module_is_reported(tmp_path, monkeypatch):
    th = _load()
    pkg = tmp_path / "puffer"
    pkg.mkdir()
    shutil.copy(ROOT / "python" / "puffer" / "refs.py", pkg / "refs.py")
    (pkg / "good.py").write_text('"""Pierquin et al. 2024, Thm 3.3."""\nfrom .refs import Ref\n'
                                 'def f():\n    return Ref("pierquin2024", "Thm 3.3")\n')
    (pkg / "bad.py").write_text('"""The bound of Ding 2022, Thm 2, for any plan."""\ndef g():\n    return 1\n')
    (pkg / "cli.py").write_text('"""Front end of Ding 2022, Thm 2."""\n')
    (pkg / "_private.py").write_text('"""Ding 2022, Thm 2."""\n')
    monkeypatch.setattr(th, "PKG", pkg)
    assert th._uncited_modules() == ["bad.py"]


# slow: scans the sources (pure Python): nothing for the sanitizer run to check
@pytest.mark.slow
def test_every_computational_result_is_cited_and_a_missing_one_fails():
    th = _load()
    text, problems = th.generate(outputs={})    # the commands' labels: tests/test_papers.py, on their output
    assert problems == [], problems
    assert "Thm A.5" in text and "Cor 4.1" in text and "Thm 5.2" in text and "Table 2" in text
    other, missing = th._catalog({}, th._tests(), {})     # nothing cited: every CODE result is reported
    assert any("pierquin2024 Thm 5.2: computational" in p for p in missing)
    assert any("chaudhuri2019 Thm 8: computational" in p for p in missing)


# A paper command's output: a table whose first column says where each row is from.
_OUTPUT = """
Figures 1, 2, 3, 5 and Lemma 2
where    what                                  paper  puffer  derived
-------  ------------------------------------  -----  ------  -------
Fig. 1a  V = 25, p = 0.7: plan entries         -      25      25
Fig. 4   eps = 9: Laplace variance, Thm 2      -      9       9
         (9 users)
Ex. IV.9/IV.14  bounded counts, eps = 0.9      -      0.9     0.9
Lemma 2  V-user system: theta at eps = 9       -      9       9
"""


def test_command_entry_needs_a_labelled_output_row():
    """The old rule passed a "Figure 9" entry when the bare number 9 appeared anywhere in the script;
    the check reads the command's output and needs a table row whose first column names the result."""
    th = _load()
    assert "9" in _OUTPUT                                      # the bare number is there ...
    assert th.command_problems("Figure 9", _OUTPUT) != []      # ... but no row is labelled Figure 9
    assert th.command_problems("Example 9", _OUTPUT) != []
    assert th.command_problems("Figure 1", _OUTPUT) == []      # Fig. 1a is a panel of Figure 1
    assert th.command_problems("Figure 4", _OUTPUT) == []
    assert th.command_problems("Example IV.9", _OUTPUT) == [] and th.command_problems("Example IV.14", _OUTPUT) == []
    assert th.command_problems("Lemma 2", _OUTPUT) == []
    assert th.command_problems("Figure 5", _OUTPUT) != []      # in the title only, not a row


def test_check_fails_on_a_bare_number_command_entry(monkeypatch):
    """Through _catalog, as --check runs it: Ding has no Figure 9, and its command's output (stood in
    by _OUTPUT) mentions 9 without a row labelled Figure 9."""
    th = _load()
    fake = type(sys)("paper_results")
    script = "examples/papers/ding2022.py"
    fake.RESULTS = {"ding2022": {"Figure 9": f"command:{script}", "Figure 4": f"command:{script}"}}
    monkeypatch.setitem(sys.modules, "paper_results", fake)
    _, problems = th._catalog({}, [], {th.ROOT / script: _OUTPUT})
    assert problems == [f"ding2022 Figure 9: {script}: no table row of its output is labelled 'Figure 9'"]


# slow: scans the sources twice (pure Python): nothing for the sanitizer run to check
@pytest.mark.slow
def test_tests_are_matched_by_qualified_name(tmp_path, monkeypatch):
    """A test of accounting's compose_parallel does not check capacity's (Chaudhuri et al. Thm 3):
    the check fails until a test refers to puffer.capacity.algebra.compose_parallel itself (here
    through the package's re-export); test methods are named path::Class::method."""
    th = _load()
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_other.py").write_text(
        "from puffer.accounting import compose_parallel\n\n\n"
        "def test_same_bare_name():\n    assert compose_parallel\n")
    monkeypatch.setattr(th, "TESTS", tests)
    monkeypatch.setattr(th, "ROOT", tmp_path)
    by_name = th._tests()
    assert [t.id for t in by_name] == ["tests/test_other.py::test_same_bare_name"]
    assert not by_name[0].checks("puffer.capacity.algebra.compose_parallel")
    assert by_name[0].checks("puffer.accounting.pufferfish.compose_parallel")
    _, problems = th.generate(outputs={})
    assert any(p.startswith("chaudhuri2019 Thm 3 (puffer.capacity.algebra.compose_parallel)") for p in problems)

    (tests / "test_capacity.py").write_text(
        "from puffer import capacity as C\n\n\n"
        "def _helper():\n    return C.compose_parallel\n\n\n"
        "class TestAlgebra:\n    def test_parallel(self):\n        assert _helper()\n")
    qualified = th._tests()
    t = next(t for t in qualified if t.id == "tests/test_capacity.py::TestAlgebra::test_parallel")
    assert t.checks("puffer.capacity.algebra.compose_parallel")     # through the helper it calls
    _, problems = th.generate(outputs={})
    assert not any(p.startswith("chaudhuri2019 Thm 3 ") for p in problems)
