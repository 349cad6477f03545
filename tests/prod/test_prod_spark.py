"""puffer.spark on a real local[2] Spark (pyspark from PyPI, Java 17): bitwise equality with
puffer.add_noise on the release's keyed streams, invariance to the partitioning, row identity
after shuffles (with and without adaptive query execution), secure noise drawn once per
release, the ledger entry, row ids, bad inputs. One Spark session for the module."""
from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from w_inf_cases import FW_ONE, FW_PERIODIC, FW_PRIORS, _same

import puffer
import puffer.io as pio
import puffer.spark as pspark
from puffer.errors import ParameterError, ParameterTypeError

KEY = hashlib.sha256(b"puffer test release key").digest()  # a 256-bit test key given as bytes
LAP = ("laplace", {"b": 2.0})
N = 5_000
_n = iter(range(10**6))


def release(df, cols, mech, tmp_path, **kw):
    """(noisy DataFrame, its pending ledger entry, column -> the release's stream)."""
    led = tmp_path / f"ledger{next(_n)}.jsonl"
    kw.setdefault("key", KEY)
    out = pspark.add_noise(df, cols, mech, ledger=led, **kw)
    entries = pio.read_ledger(led)
    assert [e["event"] for e in entries] == ["pending", "completed"]
    e = entries[0]
    assert e["path"] == "spark" and entries[1]["output_sha256"] == e["output_sha256"]
    # column c -> the documented definition: x at positions p, p + 1, ... gets (round(x/g) + Z) g, Z
    # the values of the recorded lattice law on release_stream(key, nonce, c) there
    plan = None if e["noise_lattice"] is None else puffer.lattice.LatticePlan.from_description(e["noise_lattice"])

    def ref(c):
        def noisy(x, position=0):
            s = pio.release_stream(pio.as_key(KEY), e["nonce"], c)
            s.position = int(position)
            return puffer.lattice.add_lattice_noise(np.asarray(x, dtype=np.float64), plan, rng=s)
        return noisy
    streams = {} if e["nonce"] is None else {c: ref(c) for c in cols}
    return out, e, streams


@pytest.fixture(scope="module")
def spark():
    # Started as a user would: no PYSPARK_PYTHON and this interpreter's folder off the PATH, so the
    # workers' default "python3" lacks pyarrow; puffer.spark must point them at sys.executable
    # (issue 22: every task died with "No module named pyarrow").
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PATH")}
    os.environ.pop("PYSPARK_PYTHON", None)
    os.environ.pop("PYSPARK_DRIVER_PYTHON", None)
    here = os.path.dirname(sys.executable)
    os.environ["PATH"] = os.pathsep.join(p for p in saved["PATH"].split(os.pathsep) if p and p != here)
    try:
        s = (SparkSession.builder.master("local[2]").appName("puffer-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.driver.memory", "1g")
             # heartbeats and RPCs wait long on a loaded machine; these timeouts only detect a hang
             .config("spark.network.timeout", "900s").config("spark.executor.heartbeatInterval", "60s")
             .getOrCreate())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield s
    s.stop()


def frame(spark, parts):
    return (spark.range(0, N, numPartitions=parts)
            .withColumn("x", F.sin(F.col("id").cast("double")) * 100)
            .withColumn("k", (F.col("id") % 97).cast("int"))
            .withColumn("f", F.col("x").cast("float")))


def test_bitwise_equal_to_single_process_for_any_partitioning(spark, tmp_path):
    ref_df = frame(spark, 1).toPandas()
    for parts in (3,):  # other layouts: test_positional_noise_is_the_single_process_noise_after_shuffles
        got, e, st = release(frame(spark, parts), ["x", "k", "f"], LAP, tmp_path)
        got = got.toPandas()
        assert got["id"].tolist() == list(range(N))
        for c in ("x", "k", "f"):
            want = st[c](ref_df[c].to_numpy(np.float32 if c == "f" else np.float64))
            assert np.array_equal(got[c].to_numpy(), want), (parts, c)
        assert got["f"].dtype == np.float64 and got["k"].dtype == np.float64   # lattice points: float64
        assert e["rows"] == N and e["columns"] == ["x", "k", "f"] and e["key"]["source"] == "bytes"
        assert e["unit"]["mode"] == "rows" and len(e["nonce"]) == 32


def test_two_calls_are_two_releases(spark, tmp_path):
    a, ea, _ = release(frame(spark, 2), "x", LAP, tmp_path)
    b, eb, _ = release(frame(spark, 2), "x", LAP, tmp_path)
    assert ea["nonce"] != eb["nonce"] and ea["key"]["key_id"] != eb["key"]["key_id"]  # bytes: a random id each
    base = frame(spark, 1).toPandas()["x"].to_numpy()
    na, nb = a.toPandas()["x"].to_numpy() - base, b.toPandas()["x"].to_numpy() - base
    # independent Laplace noise: |corr| < 4/sqrt(n) (false alarm ~ 6e-5)
    assert abs(np.corrcoef(na, nb)[0, 1]) < 4 / np.sqrt(N)


def test_row_id_after_a_shuffle(spark, tmp_path):
    df = frame(spark, 3).repartition(5, "k")  # rows move between partitions
    got, _, st = release(df, ["x"], LAP, tmp_path, row_id="id")
    got = got.toPandas().sort_values("id")
    base = frame(spark, 1).toPandas()
    assert np.array_equal(got["x"].to_numpy(), st["x"](base["x"].to_numpy()))


def test_mechanism_file_and_secure_mode(spark, tmp_path):
    f = tmp_path / "fw.json"
    f.write_text(json.dumps({"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}))
    df = frame(spark, 2).withColumn("x", F.col("id") % 3)  # answers of the pair query: in [0, 2]
    got, e, st = release(df, "x", f, tmp_path, per_unit=True)
    ref = st["x"](frame(spark, 1).withColumn("x", F.col("id") % 3).toPandas()["x"].to_numpy(float))
    assert np.array_equal(got.toPandas()["x"].to_numpy(), ref)
    assert e["guarantee"] is not None and e["unit"]["mode"] == "answers"
    sec, es, _ = release(df, "x", f, tmp_path, per_unit=True, secure=True, granularity=2**-12, key=None)
    y = sec.toPandas()["x"].to_numpy()
    assert np.all(y * 2**12 == np.round(y * 2**12))
    assert es["nonce"] is None and es["rng"]["mode"] == "secure"
    with pytest.raises(ParameterError, match="answer of the framework's query"):
        pspark.add_noise(frame(spark, 2), "x", f, key=KEY, per_unit=True, ledger=tmp_path / "bad.jsonl")
    with pytest.raises(ParameterError, match="privacy unit"):
        pspark.add_noise(df, "x", f, key=KEY, ledger=tmp_path / "bad.jsonl")
    assert not (tmp_path / "bad.jsonl").exists() or pio.read_ledger(tmp_path / "bad.jsonl") == []


def test_file_spark_and_dask_publish_the_same_lattice_values(spark, tmp_path, monkeypatch):
    """Issue 31 item 3: for one key and nonce the file engine, Spark and Dask publish the same
    lattice points, bit for bit -- rows by position, and answers keyed by string unit ids (the
    release's nonce pinned here; every engine draws value p of release_stream(key, nonce, c))."""
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    import puffer.dask as pdask
    import puffer.publish.release as prel

    nonce = "5a" * 16
    monkeypatch.setattr(prel, "new_nonce", lambda: nonce)
    fw = tmp_path / "fw.json"
    fw.write_text(json.dumps({"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}))
    ids = np.array([f"household-{i}" for i in range(N)], dtype=object)
    pdf = pd.DataFrame({"id": np.arange(N, dtype=np.int64), "hh": ids, "x": np.sin(np.arange(N)) * 100,
                        "a": np.arange(N) % 3 * 1.0})
    pq.write_table(pa.Table.from_pandas(pdf, preserve_index=False), tmp_path / "in.parquet")
    # (a ledger per release: a fresh nonce is never one its ledger has seen, and it is pinned here)
    for case, (cols, mech, kw) in enumerate(((["x"], LAP, {}), (["a"], str(fw), {"unit": "hh", "per_unit": True}))):
        got, lattices = [], []
        e = pio.noise_file(tmp_path / "in.parquet", tmp_path / f"o{case}.parquet", cols, mech, key=KEY,
                           ledger=tmp_path / f"f{case}.jsonl", **kw)
        got.append(pq.read_table(tmp_path / f"o{case}.parquet").to_pandas())
        lattices.append(e["noise_lattice"])
        for n, engine in enumerate((pspark, pdask)):
            led = tmp_path / f"e{case}{n}.jsonl"
            data = spark.createDataFrame(pdf) if engine is pspark else dd.from_pandas(pdf, npartitions=3)
            out = engine.add_noise(data, cols, mech, key=KEY, ledger=led, **kw)
            got.append(out.toPandas() if engine is pspark else out.compute())
            entry = pio.read_ledger(led)[0]
            assert entry["nonce"] == nonce == e["nonce"]
            lattices.append(entry["noise_lattice"])
        assert lattices[0] == lattices[1] == lattices[2] and lattices[0] is not None
        by = "hh" if kw else "id"
        vals = [g.sort_values(by)[cols[0]].to_numpy() for g in got]
        assert np.array_equal(vals[0], vals[1]) and np.array_equal(vals[0], vals[2]), cols
        g = lattices[0]["granularity"]
        assert np.array_equal(vals[0] / g, np.round(vals[0] / g))


def test_bad_inputs(spark, tmp_path):
    df = frame(spark, 2).withColumn("s", F.lit("a"))
    led = tmp_path / "l.jsonl"
    with pytest.raises(ParameterError, match="puffer keygen"):
        pspark.add_noise(df, ["x"], LAP, seed=1, ledger=led)
    with pytest.raises(ParameterTypeError, match="puffer keygen"):
        pspark.add_noise(df, ["x"], LAP, key=7, ledger=led)
    with pytest.raises(ParameterError, match="'nope'"):
        pspark.add_noise(df, ["nope"], LAP, key=KEY, ledger=led)
    with pytest.raises(ParameterTypeError, match="column 's'"):
        pspark.add_noise(df, ["s"], LAP, key=KEY, ledger=led)
    dup = df.withColumn("rid", (F.col("id") % 10))
    with pytest.raises(ParameterError, match="duplicates"):
        pspark.add_noise(dup, ["x"], LAP, key=KEY, row_id="rid", ledger=led)
    with pytest.raises(ParameterError, match=">= 0"):
        pspark.add_noise(df.withColumn("rid", -F.col("id") - 1), ["x"], LAP, key=KEY, row_id="rid", ledger=led)
    nul = df.withColumn("x", F.when(F.col("id") == 5, F.lit(None)).otherwise(F.col("x")))
    with pytest.raises(Exception, match="null at row 5"):
        pspark.add_noise(nul, ["x"], LAP, key=KEY, ledger=led)
    big = df.withColumn("b", F.lit(2**62).cast("long"))
    with pytest.raises(Exception, match="2\\^53"):
        pspark.add_noise(big, ["b"], LAP, key=KEY, ledger=led)
    assert not led.exists() or [e["event"] for e in pio.read_ledger(led)] == []  # nothing released
    kept, _, st = release(nul, ["x"], LAP, tmp_path, nulls="keep")
    kept = kept.toPandas()
    assert np.isnan(kept["x"][5]) and kept["x"].isna().sum() == 1
    with pytest.raises(ParameterTypeError, match="df"):
        pspark.add_noise(df.toPandas(), ["x"], LAP, key=KEY, ledger=led)


# ---- row identity (issue 23 item 6, acceptance 4) -------------------------------------------
M = 20_000


def truth(ids):
    return (np.asarray(ids) % 1000) * 0.25 - 100.0  # exact in binary floating point, as in Spark


def plain(spark):
    return (spark.range(0, M, numPartitions=4).withColumn("x", (F.col("id") % 1000) * 0.25 - 100.0)
            .withColumn("k", (F.col("id") * 7919 % 13).cast("int")))


SHUFFLES = {
    "orderBy with ties": lambda d: d.orderBy("k"),
    "round-robin repartition, filter": lambda d: d.repartition(5).filter(F.col("id") % 7 != 3),
    "hash repartition, filter, orderBy": lambda d: d.repartition(3, "k").filter(F.col("x") > -60).orderBy("x"),
}


@pytest.mark.parametrize("aqe", [False, True])
def test_positional_noise_is_the_single_process_noise_after_shuffles(spark, aqe, tmp_path):
    """Without row_id, after orderBy / repartition / filters, with and without adaptive query
    execution: the noise of the row at position i of the result is value i of the column
    stream (the single-process noise of that row), so no stream is used twice; a second action
    and a coalesce return the same values. Before the fix 1,000s of rows shared a stream."""
    spark.conf.set("spark.sql.adaptive.enabled", str(aqe).lower())
    try:
        for name, shuffle in SHUFFLES.items():
            noisy, _, st = release(shuffle(plain(spark)), "x", LAP, tmp_path)
            got = noisy.select("id", "x").toPandas()
            ids = got["id"].to_numpy()
            assert len(np.unique(ids)) == len(ids), name
            want_n = plain(spark).transform(shuffle).count()
            assert len(ids) == want_n, name
            ref = st["x"](truth(ids))
            same = int(np.sum(got["x"].to_numpy() == ref))
            assert same == len(ids), f"{name}, aqe={aqe}: {same} of {len(ids)} rows have their own noise"
            # (every row has the noise of its own position, and the positions are distinct ids: no
            # position's noise is used twice; lattice noise takes equal values by chance, so equal
            # noise values are no sign of a shared stream any more)
            again = noisy.select("id", "x").toPandas()
            assert np.array_equal(again["id"].to_numpy(), ids) and np.array_equal(again["x"].to_numpy(), ref)
            one = noisy.coalesce(1).select("id", "x").toPandas().set_index("id")["x"]
            assert np.array_equal(one.loc[ids].to_numpy(), ref), name
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


def test_secure_mode_is_drawn_once_per_release(spark, tmp_path):
    """Two actions on one secure-mode frame return the same lattice values (before: 99.99 % of
    the rows differed and averaging two collects cut the noise SD by sqrt(2)); a retry or a
    coalesce recomputes the same noise; another release draws fresh noise."""
    f = tmp_path / "fw.json"
    f.write_text(json.dumps({"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}))
    m = pio.resolve(f, lattice=True).mechanism  # lattice noise: the least noise certified on a lattice
    noisy, _, _ = release(plain(spark).orderBy("k").withColumn("x", (F.col("id") % 3).cast("double")), "x", f,
                          tmp_path, secure=True, granularity=2**-10, per_unit=True, key=None)
    a = noisy.select("id", "x").toPandas()
    b = noisy.select("id", "x").toPandas()
    assert np.array_equal(a["id"].to_numpy(), b["id"].to_numpy())
    assert np.array_equal(a["x"].to_numpy(), b["x"].to_numpy())
    c = noisy.coalesce(1).select("id", "x").toPandas().set_index("id")["x"]
    assert np.array_equal(c.loc[a["id"]].to_numpy(), a["x"].to_numpy())
    y, ids = a["x"].to_numpy(), a["id"].to_numpy()
    assert np.all(y * 2**10 == np.round(y * 2**10))
    # discrete Laplace of the mechanism's (padded) scale b' >= b: E|Z| ~ b'; 20,000 draws put the
    # mean within 3 % (4 sd: false alarm < 1e-4), so the noise is real and of the calibrated size
    d = np.abs(y - ids % 3)
    assert abs(d.mean() / m.noise.scale - 1) < 0.03
    other, _, _ = release(plain(spark).orderBy("k").withColumn("x", (F.col("id") % 3).cast("double")), "x", f,
                          tmp_path, secure=True, granularity=2**-10, per_unit=True, key=None)
    o = other.select("id", "x").toPandas().set_index("id")["x"].loc[ids].to_numpy()
    assert np.mean(o == y) < 0.05  # a fresh release: independent noise


def test_python_workers_get_this_interpreter(spark, tmp_path):
    assert "PYSPARK_PYTHON" not in os.environ
    release(plain(spark), "x", LAP, tmp_path)[0].count()
    assert spark.sparkContext.pythonExec == sys.executable


# ---- one dataset, one key and nonce: file, Spark and Dask releases (acceptance 2) -------------
PATH_FIELDS = {"path", "input", "output", "input_sha256", "output_sha256", "release_id", "time", "seconds",
               "seq", "prev", "hash", "sig", "digests", "partitions", "config"}


def comparable(e):
    """The entry without the fields that name where the data lives (paths, digests of its bytes,
    ids and times of the run); the configuration without the file path's output format."""
    out = {k: v for k, v in e.items() if k not in PATH_FIELDS}
    out["config"] = {k: v for k, v in e["config"].items() if k not in ("input_sha256", "format_out")}
    return out


def test_file_spark_and_dask_releases_are_bitwise_equal(spark, tmp_path, monkeypatch):
    import dask.dataframe as dd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    from puffer.publish import PublishOptions

    keyfile = tmp_path / "release.key"
    pio.keygen(keyfile)
    signer = tmp_path / "ledger.sign"
    pio.signing_keygen(signer)
    nonce = pio.new_nonce()
    monkeypatch.setattr("puffer.publish.release.new_nonce", lambda: nonce)  # one nonce for the three paths
    rng = np.random.default_rng(11)
    units = 500
    hh = np.repeat(rng.permutation(10**6)[:units], 4)
    perm = rng.permutation(hh.size)
    table = pa.table({"hh": hh[perm], "t": np.tile(np.arange(4), units)[perm],
                      "kwh": (rng.integers(0, 2, hh.size) * 1.0)[perm], "v": rng.normal(size=hh.size) * 50})
    src = tmp_path / "in.parquet"
    pq.write_table(table, src, row_group_size=700)
    fw = {"model": {"kind": "markov_chain", "T": 4, "trans": [[0.8, 0.2], [0.3, 0.7]]}, "target": {"eps": 1.0}}
    cases = {"units": ("kwh", fw, {"unit": "hh", "order": "t"}, "hh"),
             "rows": (["v", "kwh"], LAP, {}, None)}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           memory_limit="2GiB")
    client = Client(cluster)
    try:
        import puffer.dask as pdask

        for name, (cols, mech, kw, sort) in cases.items():
            led = {p: tmp_path / f"{name}-{p}.jsonl" for p in ("file", "spark", "dask")}
            opts = PublishOptions(key=keyfile, signing_key=signer, **kw)  # one options object, three engines
            pio.noise_file(src, tmp_path / f"{name}.parquet", cols, mech, options=opts, ledger=led["file"])
            f_out = pq.read_table(tmp_path / f"{name}.parquet").to_pandas()
            sdf = spark.read.parquet(str(src))
            s_out = pspark.add_noise(sdf.repartition(3) if sort else sdf, cols, mech, options=opts,
                                     ledger=led["spark"]).toPandas()
            ddf = dd.read_parquet(str(src)) if not sort else dd.from_pandas(table.to_pandas(), npartitions=3)
            d_out = pdask.add_noise(ddf, cols, mech, options=opts, ledger=led["dask"]).compute()
            if sort:  # one order on every engine: by unit (issue 30 §5: Dask's came back unsorted)
                s_out, d_out, f_out = (x.reset_index(drop=True) for x in (s_out, d_out, f_out))
                assert (np.diff(f_out[sort].to_numpy()) > 0).all()
            for c in [cols] if isinstance(cols, str) else cols:
                o = c + "_sum_noisy" if sort else c  # records: the noisy sum, named for what it is
                assert np.array_equal(f_out[o].to_numpy(), s_out[o].to_numpy()), (name, c, "spark")
                assert np.array_equal(f_out[o].to_numpy(), d_out[o].to_numpy()), (name, c, "dask")
                assert not np.array_equal(f_out[o].to_numpy(), table.column(c).to_numpy()[: len(f_out)])
            if sort:
                assert np.array_equal(f_out[sort].to_numpy(), s_out[sort].to_numpy())
                assert np.array_equal(f_out[sort].to_numpy(), d_out[sort].to_numpy())
            entries = {p: pio.read_ledger(led[p]) for p in led}
            for p, es in entries.items():
                assert [e["event"] for e in es] == ["pending", "completed"], p
                assert es[0]["nonce"] == nonce
                v = pio.verify(led[p], pub=str(signer) + ".pub", checkpoint=pio.checkpoint(led[p]))
                assert v["authenticated"] and v["entries"] == 2, p
            want = comparable(entries["file"][0])
            for p in ("spark", "dask"):
                got = comparable(entries[p][0])
                diff = {k for k in set(want) | set(got) if want.get(k) != got.get(k)}
                assert not diff, (name, p, {k: (want.get(k), got.get(k)) for k in diff})
                assert entries[p][0]["path"] == p
    finally:
        client.close()
        cluster.close()


# ---- Markov Delta_G on Spark (the Dask side: test_prod_cluster_w_inf.py) ----------------------
def test_spark_bitwise_equal_for_prior_and_position_splits(spark):
    for fw, tasks in ((FW_PRIORS, None), (FW_ONE, 5), (FW_PERIODIC, 3)):
        _same(pspark.w_inf(fw, spark, tasks=tasks), fw.w_inf())
    _same(pspark.w_inf(FW_PRIORS, spark.sparkContext, tasks=2), FW_PRIORS.w_inf())


def test_unit_ids_must_be_integers_or_strings(spark, tmp_path):
    """Issue 31 item 4: unit ids of another type were hashed through their text, and texts collide.
    Two array ids that differ in one element print alike (numpy elides the middle of a long array):
    in different partitions they got one stream position, so the same noise, and their exact
    difference was published. Every type but integers and strings is refused, before any work."""
    a = list(range(2000))
    b = a[:1000] + [-1] + a[1001:]
    led = tmp_path / "l.jsonl"
    df = spark.createDataFrame(spark.sparkContext.parallelize([(a, 1.0), (b, 2.0)], 2), "u array<long>, x double")
    with pytest.raises(ParameterTypeError, match="integer or string unit ids"):
        pspark.add_noise(df, "x", ("laplace", {"b": 1.0}), key=KEY, unit="u", per_unit=True, ledger=led)
    for typ, vals in (("binary", [bytearray(b"1"), bytearray(b"2")]), ("double", [1.0, 2.0]),
                      ("decimal(4,1)", None), ("struct<a:long>", [(1,), (2,)])):
        if vals is None:
            from decimal import Decimal
            vals = [Decimal("1.0"), Decimal("2.0")]
        df = spark.createDataFrame([(v, 1.0) for v in vals], f"u {typ}, x double")
        for per_unit in (True, False):
            with pytest.raises(ParameterTypeError, match="integer or string unit ids"):
                pspark.add_noise(df, "x", ("laplace", {"b": 1.0}), key=KEY, unit="u", per_unit=per_unit, ledger=led)
    assert not led.exists()  # refused before anything was recorded


def test_values_the_noise_cannot_change_are_refused(spark, tmp_path):
    """Issue 31 item 4: 2^60 and a scale of 1e-300 were published exactly; refused on Spark as on
    the other engines (puffer.publish.values, in the workers), nothing recorded."""
    led = tmp_path / "l.jsonl"
    df = spark.createDataFrame([(1.0,), (2.0**60,)], "x double")
    with pytest.raises(ParameterError, match="x.*at row 1"):
        pspark.add_noise(df, "x", ("laplace", {"b": 1.0}), key=KEY, ledger=led)
    df = spark.createDataFrame([(0.5,), (1.5,)], "x double")
    with pytest.raises(ParameterError, match="allow_unnoised"):
        pspark.add_noise(df, "x", ("laplace", {"b": 1e-300}), key=KEY, ledger=led)
    assert not led.exists() or pio.read_ledger(led) == []


def test_a_refused_release_leaves_no_unit_secret(spark, tmp_path):
    """Issue 42 item 2 on Spark (the file engine had it): a refused release with a unit column left
    L.jsonl.unit-secret behind. Refused before the release began (duplicate unit ids) or in the
    workers (1.5, no value of the pair's query): no secret left; a recorded release keeps it."""
    f = tmp_path / "fw.json"
    f.write_text(json.dumps({"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}))
    led, secret = tmp_path / "L.jsonl", tmp_path / "L.jsonl.unit-secret"
    for rows, match in (([(1, 0.0), (1, 1.0), (2, 2.0)], "duplicates"), ([(1, 0.0), (2, 1.5), (3, 2.0)], "integer")):
        with pytest.raises(ParameterError, match=match):
            pspark.add_noise(spark.createDataFrame(rows, "hh long, x double"), "x", f, key=KEY, unit="hh",
                             per_unit=True, ledger=led)
        assert not secret.exists(), match
    assert not led.exists() or "completed" not in [e["event"] for e in pio.read_ledger(led)]
    pspark.add_noise(spark.createDataFrame([(1, 0.0), (2, 1.0), (3, 2.0)], "hh long, x double"), "x", f, key=KEY,
                     unit="hh", per_unit=True, ledger=led)
    assert secret.exists()
