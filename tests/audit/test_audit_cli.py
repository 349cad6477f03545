"""`puffer audit FILE` and `puffer demo --plot DIR`."""
import json
import os

from puffer import cli
from puffer.config import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOUSEHOLD = os.path.join(ROOT, "examples", "household.toml")


def test_audit_table_and_json(capsys, tmp_path):
    assert cli.main(["audit", HOUSEHOLD, "--n", "4000", "--seed", "1"]) == 0
    out = capsys.readouterr()
    assert "empirical lower" in out.out and "Wasserstein (Laplace)" in out.out
    assert sum(" ok " in ln for ln in out.out.splitlines()) == 11   # 9 + the 2 Markov-quilt rows of puffer run
    assert "[1/" in out.err                           # progress on stderr
    small = tmp_path / "users.json"
    small.write_text(json.dumps({"model": {"kind": "independent_users", "p": [0.3, 0.6, 0.5], "users": [0, 1]},
                                 "target": {"eps": 1.0, "delta": 1e-5, "alpha": 2.0}}))
    assert cli.main(["audit", str(small), "--n", "4000", "--seed", "1", "--json", "--pairs", "all",
                     "--confidence", "0.999"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["reports"]
    assert len(rows) == 9 and all(not r["violated"] for r in rows)
    assert all(r["confidence"] == 0.999 and len(r["pairs"]) > 2 for r in rows)


def test_audit_bad_input_exit_codes(tmp_path, capsys):
    assert cli.main(["audit", str(tmp_path / "missing.toml")]) == cli.EXIT_INPUT
    assert cli.main(["audit", HOUSEHOLD, "--n", "5"]) == cli.EXIT_INPUT
    assert "n" in capsys.readouterr().err


def test_demo_plot_writes_the_figures(tmp_path, monkeypatch, capsys):
    small = load_config(HOUSEHOLD)
    small.pop("release")
    monkeypatch.setattr(cli, "DEMO", small)
    d = tmp_path / "figs"
    assert cli.main(["demo", "--plot", str(d)]) == 0
    names = sorted(os.listdir(d))
    assert names == ["audit.png", "epsilon_curves.png", "noise_vs_eps.png", "transport_plan.png"]
    assert all(os.path.getsize(d / f) > 5_000 for f in names)
