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
                   "noisy", "worst case", "Markov quilt, MQMExact (Laplace)", "binding quilt"):
        assert needle in out


def test_demo_markov_quilt_row_matches_the_mechanism(capsys):
    """The demo's MarkovQuilt row (Song et al. 2017) prints the noise scale of
    puffer.mechanisms.MarkovQuilt on the demo framework (the 8 x 8 prior grid, T = 48)."""
    import puffer
    from puffer.config import build_framework

    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("Markov quilt, MQMExact"))
    m = puffer.mechanisms.MarkovQuilt(build_framework(cli.DEMO["model"]), eps=cli.DEMO["target"]["eps"])
    assert f"Laplace({m.noise.scale:.4g})" in line and "1-PP" in line


@pytest.mark.parametrize("name", ["household.toml", "adult.json"])
def test_run_example_files(name, capsys):
    assert cli.main(["run", str(EXAMPLES / name)]) == 0
    out = capsys.readouterr().out
    assert "Wasserstein (Laplace)" in out and "guarantee" in out


def test_adult_file_gives_sensitivity_two(capsys):
    cli.main(["run", str(EXAMPLES / "adult.json")])
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("Wasserstein (Laplace)"))
    assert line.split()[2] == "2"


def _write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return str(f)


GOOD = """
[model]
kind = "correlated_pair"
[target]
eps = 0.5
"""


def test_bad_files_give_clear_errors_and_exit_3(tmp_path, capsys):
    bad = _write(tmp_path, "bad.json", json.dumps({"model": {"kind": "nope"}, "target": {"eps": 1}}))
    assert cli.main(["run", bad]) == 3
    assert "model.kind" in capsys.readouterr().err
    assert cli.main(["run", _write(tmp_path, "f.yaml", "x")]) == 3
    missing = _write(tmp_path, "m.json", json.dumps({"model": {"kind": "markov_chain", "T": 3}, "target": {"eps": 1}}))
    assert cli.main(["run", missing]) == 3
    assert "'trans'" in capsys.readouterr().err


@pytest.mark.parametrize("text, needle", [
    # a misspelled privacy parameter is an error with a suggestion, never a silent eps = 1
    (GOOD.replace("eps = 0.5", "epsilon = 0.1"), "did you mean 'eps'"),
    # no [target] at all: no default privacy parameters
    ('[model]\nkind = "correlated_pair"\n', "'target'"),
    # unknown keys anywhere
    (GOOD + "\n[relase]\nvalues = [1.0]\n", "did you mean 'release'"),
    (GOOD.replace('kind = "correlated_pair"', 'kind = "correlated_pair"\nrh0 = 0.2'), "did you mean 'rho'"),
    # non-numeric release values
    (GOOD + '\n[release]\nvalues = [1.0, "x"]\n', "release.values[1]"),
    # TOML syntax error: no traceback
    ("[model\nkind = 1", "valid TOML"),
    (GOOD.replace("eps = 0.5", "eps = -1"), "target.eps"),
])
def test_strict_schema(tmp_path, capsys, text, needle):
    assert cli.main(["run", _write(tmp_path, "f.toml", text)]) == 3
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_json_syntax_error_and_missing_file(tmp_path, capsys):
    assert cli.main(["run", _write(tmp_path, "f.json", "{")]) == 3
    assert "valid JSON" in capsys.readouterr().err
    assert cli.main(["run", str(tmp_path / "nope.toml")]) == 3
    assert "readable file" in capsys.readouterr().err


def test_usage_error_exit_code_differs_from_input_error():
    with pytest.raises(SystemExit) as e:
        cli.main(["frobnicate"])
    assert e.value.code == 2


def test_version(capsys):
    import puffer
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and puffer.__version__ in capsys.readouterr().out


def test_delta_comes_from_the_file(tmp_path, capsys):
    """The approximate-RPP row uses the file's delta (it was hard-coded to 1e-3)."""
    f = _write(tmp_path, "f.toml", GOOD + "delta = 0.02\n")
    assert cli.main(["run", f]) == 0
    out = capsys.readouterr().out
    assert "GAWM Laplace, delta=0.02" in out and "1e-3" not in out and "0.001" not in out


def test_rows_follow_the_target(tmp_path, capsys):
    """Without delta / alpha only the rows that need neither appear (no defaults)."""
    assert cli.main(["run", _write(tmp_path, "f.toml", GOOD)]) == 0
    out = capsys.readouterr().out
    assert "Wasserstein (Laplace)" in out and "GWM Gaussian" not in out and "GAWM" not in out


def test_json_output_and_progress_on_stderr(tmp_path, capsys):
    f = _write(tmp_path, "f.toml", GOOD + "delta = 1e-5\nalpha = 2.0\n")
    assert cli.main(["run", f, "--json"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert "calibrating" in cap.err and "calibrating" not in cap.out
    labels = [r["label"] for r in doc["rows"]]
    assert labels[0] == "Wasserstein (Laplace)" and len(labels) == 9 + (2 if "markov" in GOOD else 0)
    import puffer
    for r in doc["rows"]:
        g = puffer.guarantee_from_dict(r["guarantee"])
        assert g.provenance.refs, r["label"]
    assert "gain" in doc["gain_definition"]


def test_gain_is_defined_once_in_the_table(capsys):
    assert cli.main(["demo"]) == 0
    assert cli.GAIN_NOTE in capsys.readouterr().out


def test_console_script_installed():
    exe = shutil.which("puffer", path=str(Path(sys.executable).parent))
    assert exe is not None
    out = subprocess.run([exe, "run", str(EXAMPLES / "household.toml")], capture_output=True, text=True,
                         check=True).stdout
    assert "done in" in out
