"""The main job and the `puffer` entry point: the demo, and frameworks read from JSON / TOML."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from puffer import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_demo_prints_the_table(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    for needle in ("Wasserstein (Laplace)", "Kantorovich Thm 2", "GWM Gaussian", "group-DP scale", "gain",
                   "noisy", "worst case"):
        assert needle in out


@pytest.mark.parametrize("name", ["household.toml", "adult.json"])
def test_run_example_files(name, capsys):
    assert cli.main(["run", str(EXAMPLES / name)]) == 0
    out = capsys.readouterr().out
    assert "Wasserstein (Laplace)" in out and "guarantee" in out


def test_adult_file_gives_sensitivity_two(capsys):
    cli.main(["run", str(EXAMPLES / "adult.json")])
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("Wasserstein (Laplace)"))
    assert line.split()[2] == "2"


def test_bad_files_give_clear_errors(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model": {"kind": "nope"}}))
    assert cli.main(["run", str(bad)]) == 2
    assert "model.kind" in capsys.readouterr().err
    other = tmp_path / "f.yaml"
    other.write_text("x")
    assert cli.main(["run", str(other)]) == 2
    missing = tmp_path / "m.json"
    missing.write_text(json.dumps({"model": {"kind": "markov_chain"}}))
    assert cli.main(["run", str(missing)]) == 2
    assert "'trans'" in capsys.readouterr().err


def test_console_script_installed():
    exe = shutil.which("puffer", path=str(Path(sys.executable).parent))
    assert exe is not None
    out = subprocess.run([exe, "run", str(EXAMPLES / "household.toml")], capture_output=True, text=True,
                         check=True).stdout
    assert "done in" in out
