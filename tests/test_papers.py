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


def _theorems():
    spec = importlib.util.spec_from_file_location("theorems_script", PAPERS.parent.parent / "scripts" / "theorems.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name,must,figures", [
    ("pierquin2024", ["Table 1", "Fig. 5", "Fig. 6", "Student Performance", ">= 100", "1.48884", "0.620115",
                      "1.39765"], 2),
    ("ding2022", ["Table 2", "Table 6", "Fig. 4", "all 16 entries equal", "0.671195", "7.3281", "misprint"], 4),
    ("guerra_balboa2024", ["Ex. VI.8", "Cor. A.18", "no guarantee", "any k > 3", "(sum eps_i, sum delta_i)"], 0),
    ("seeman2024", ["Fig. 2", "Fig. 4", "synthetic", "Allegheny", "exact sampler"], 4),
    ("chaudhuri2019", ["Table 1", "Fig. 1a", "Fig. 2b", "0.405465", "alpha ~ 3.3"], 4),
])
def test_paper_command_prints_its_table(name, must, figures, capsys, tmp_path):
    """Each command prints its tables with the paper's statements, puffer's values and the derived
    ones in separate columns, agrees wherever it compares, labels every result the theorem map
    says it reproduces (scripts/theorems.py), and with --plot writes its figures where it says."""
    argv = ["--quick"] + (["--plot", str(tmp_path / "figures")] if figures else [])
    assert _load(name).main(argv) == 0
    out = capsys.readouterr().out
    for s in must:
        assert s in out, (name, s)
    assert "DIFFERENT" not in out, out       # every printed agreement column says the values match
    assert "ABOVE derived" not in out or name == "chaudhuri2019", out   # the one unsound printed bound shown
    # each command prints at least one table: a header underlined by dashes, with the three kinds of value
    assert any(set(line.replace(" ", "")) == {"-"} for line in out.splitlines())
    assert "paper: only what the paper states" in out.replace("\n", " ")
    th = _theorems()
    sys.path.insert(0, str(th.ROOT / "scripts"))
    try:
        from paper_results import RESULTS
    finally:
        sys.path.remove(str(th.ROOT / "scripts"))
    entries = [item for items in RESULTS.values() for item, how in items.items()
               if how == f"command:examples/papers/{name}.py"]
    assert [p for item in entries for p in th.command_problems(item, out)] == []
    if figures:
        written = sorted((tmp_path / "figures").glob("*.png"))
        assert len(written) == figures and all(p.stat().st_size > 10_000 for p in written)
        assert all(str(p) in out for p in written)      # the command says where each figure is
    else:
        assert "--plot" not in out


@pytest.mark.parametrize("name,unbuffered", [(n, False) for n in ("pierquin2024", "ding2022", "guerra_balboa2024",
                                                                     "seeman2024", "chaudhuri2019")]
                         + [("seeman2024", True), ("guerra_balboa2024", True)])
def test_paper_command_is_quiet_on_a_broken_pipe(name, unbuffered):
    """`python examples/papers/NAME.py | head` ended in a BrokenPipeError traceback (or, with
    stdout buffered as it is by default, in "Exception ignored ... BrokenPipeError" and exit 120);
    now it exits 141 with nothing on stderr, as the puffer command does. The reader is gone before
    the first byte, so every write fails: at the first print (PYTHONUNBUFFERED) or at the flush."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    rd, wr = os.pipe()
    os.close(rd)
    try:
        r = subprocess.run([sys.executable, str(PAPERS / f"{name}.py"), "--quick"], stdout=wr,
                           stderr=subprocess.PIPE, text=True, env=env, timeout=900)  # a hang guard: seconds alone
    finally:
        os.close(wr)
    assert (r.returncode, r.stderr) == (141, ""), r.stderr[-2000:]
