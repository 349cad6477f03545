"""The papers' experiment commands (examples/papers/): each runs in quick mode, prints its
comparison table, and agrees with the paper where an 'agreement' column is printed."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PAPERS = Path(__file__).resolve().parent.parent / "examples" / "papers"


def _load(name: str):
    sys.path.insert(0, str(PAPERS))
    try:
        spec = importlib.util.spec_from_file_location(f"papers_{name}", PAPERS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(PAPERS))
    return mod


@pytest.mark.parametrize("name,must", [
    ("pierquin2024", ["Table 1", "Figure 5", "Figure 6", "Student Performance", "1.48884"]),
    ("ding2022", ["Table 2", "Table 6", "Figure 4", "all entries equal", "0.671195", "7.3281"]),
    ("guerra_balboa2024", ["Ex. VI.8", "Cor. A.18", "no guarantee"]),
    ("seeman2024", ["Figure 2", "Figure 4", "synthetic", "Allegheny"]),
    ("chaudhuri2019", ["Table 1", "1a", "2b", "0.405465"]),
])
def test_paper_command_prints_its_table(name, must, capsys):
    assert _load(name).main(["--quick"]) == 0
    out = capsys.readouterr().out
    for s in must:
        assert s in out, (name, s)
    assert "DIFFERENT" not in out, out       # every printed agreement column says the values match
    # each command prints at least one table: a header underlined by dashes
    assert any(set(line.replace(" ", "")) == {"-"} for line in out.splitlines())
