"""The shape of puffer.publish (issue 31 §6): one options object for every engine, imports that
run one way, the old public names still working.

Oracles: the modules' own source (the import graph read with ast), and byte equality of
outputs released with the options given as an object or as keywords."""
from __future__ import annotations

import ast
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import puffer
import puffer.io as pio
import puffer.publish as pub
from puffer.errors import ParameterError, ParameterTypeError
from puffer.publish import PublishOptions

LAP = ("laplace", {"b": 1.0})

# each module may import only modules listed before it (engines and cli last)
LAYERS = ["_files", "options", "keys", "signing", "streams", "values", "units", "plan", "noise", "digest", "registry", "unitsets", "index",
          "ledger", "totals", "release", "preamble", "report", "engines.arrow", "engines.staging", "engines.file",
          "engines.spark", "engines.dask", "engines.w_inf", "cli"]


def _imports(path: str, package: str) -> set[str]:
    """Modules of puffer.publish that ``path`` imports (at top level or inside functions)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for n in names:
            if n.startswith("puffer.publish."):
                out.add(n[len("puffer.publish."):])
            if n.startswith(("puffer.io", "puffer.spark", "puffer.dask")) and not n.startswith("puffer.iot"):
                out.add("<entry point " + n + ">")
    return out


def test_imports_run_one_way():
    root = os.path.dirname(pub.__file__)
    seen = set()
    for k, name in enumerate(LAYERS):
        path = os.path.join(root, *name.split(".")) + ".py"
        seen.add(name)
        package = "puffer.publish" + ("." + name.rsplit(".", 1)[0] if "." in name else "")
        below = set(LAYERS[:k])
        for dep in _imports(path, package):
            mod = next((m for m in LAYERS if dep == m or dep.startswith(m + ".")), None)
            if mod is None and dep in ("engines",):
                continue
            assert mod is not None and mod in below, f"puffer.publish.{name} imports {dep}"
    files = {os.path.relpath(os.path.join(d, f), root)[:-3].replace(os.sep, ".")
             for d, _, fs in os.walk(root) for f in fs if f.endswith(".py") and not f.startswith("__")}
    assert files == seen, files ^ seen  # every module has its place in the order


def test_old_names_still_work(tmp_path):
    import puffer.dask
    import puffer.io.files
    import puffer.io.ledger
    import puffer.spark

    assert puffer.io.ledger is pub.ledger and puffer.io.files.noise_file is pio.noise_file
    for mod in (puffer.spark, puffer.dask):
        assert callable(mod.add_noise) and callable(mod.w_inf) and mod.PublishOptions is PublishOptions
    for name in pio.__all__:
        assert getattr(pio, name) is not None


def test_options_object_or_keywords_give_the_same_release(tmp_path):
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.linspace(0, 1, 100)}), src)
    keyf = tmp_path / "k.key"
    pio.keygen(keyf)
    led = tmp_path / "l.jsonl"
    a = pio.noise_file(src, tmp_path / "a.parquet", "x", LAP, key=keyf, ledger=led)
    opts = PublishOptions(key=keyf, rerun=a["release_id"])
    b = pio.noise_file(src, tmp_path / "b.parquet", "x", LAP, options=opts, ledger=led)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert b["config"] == a["config"] and b["post_processing"] == []
    # a field given twice, a keyword that is no field (its value never shown: it may be a key)
    with pytest.raises(ParameterError, match="'key'.*given once"):
        pio.noise_file(src, tmp_path / "c.parquet", "x", LAP, options=opts, key=bytes(32), ledger=led)
    with pytest.raises(ParameterTypeError, match="'kee' = <a bytes>.*a field of") as err:
        pio.noise_file(src, tmp_path / "c.parquet", "x", LAP, kee=b"\x01" * 32, ledger=led)
    assert "\\x01" not in str(err.value)
    with pytest.raises(ParameterTypeError, match="options"):
        pio.noise_file(src, tmp_path / "c.parquet", "x", LAP, options={"key": keyf})
    with pytest.raises(ParameterTypeError, match="'per_unit' = 1"):
        PublishOptions(per_unit=1)
    with pytest.raises(ParameterError, match="budget"):
        PublishOptions(budget=float("nan"))
    assert "bytes" in repr(PublishOptions(key=bytes(32))) and "\\x00" not in repr(PublishOptions(key=bytes(32)))
    assert not (tmp_path / "c.parquet").exists()


def test_post_processing_steps_are_applied_and_recorded(tmp_path):
    """The hook a post-processing step (e.g. clamping to the query's range) plugs into: applied
    after the noise, recorded in the entry and in the configuration a re-run must match."""
    from puffer.publish.noise import ColumnNoise

    class Floor:
        def describe(self):
            return {"step": "floor"}

        def __call__(self, values, column):
            return np.floor(values)

    keyf = tmp_path / "k.key"
    pio.keygen(keyf)
    led = tmp_path / "l.jsonl"
    prep = pub.prepare(LAP, ["x"], PublishOptions(key=keyf), default_ledger=str(led))
    prep.post = (Floor(),)
    rel = prep.begin(input_sha256="sha256:" + "0" * 64, path_kind="file")
    noise = prep.noise(rel, threads=1)
    assert isinstance(noise, ColumnNoise)
    x = np.linspace(0, 10, 50)
    got = noise.add(x, "x", 0)
    want = np.floor(puffer.lattice.add_lattice_noise(x, prep.noise_lattice, rng=pub.release_stream(rel.key, rel.nonce, "x")))
    assert np.array_equal(got, want)
    e = rel.commit("sha256:" + "1" * 64, 50)
    assert e["post_processing"] == [{"step": "floor"}] and e["config"]["post_processing"] == [{"step": "floor"}]
