"""puffer.spark on a real local[2] Spark (pyspark from PyPI, Java 17): bitwise equality with
puffer.add_noise on the same rows, invariance to the partitioning, row ids, bad inputs.
One Spark session for the module."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import puffer
import puffer.io as pio
import puffer.spark as pspark
from puffer.errors import ParameterError, ParameterTypeError

SEED = 424242
LAP = ("laplace", {"b": 2.0})
N = 5_000


@pytest.fixture(scope="module")
def spark():
    # the workers must run this interpreter (the one with puffer and pyarrow), not the system python3
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    s = (SparkSession.builder.master("local[2]").appName("puffer-test")
         .config("spark.pyspark.python", sys.executable).config("spark.pyspark.driver.python", sys.executable)
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.driver.memory", "1g").getOrCreate())
    yield s
    s.stop()


def frame(spark, parts):
    return (spark.range(0, N, numPartitions=parts)
            .withColumn("x", F.sin(F.col("id").cast("double")) * 100)
            .withColumn("k", (F.col("id") % 97).cast("int"))
            .withColumn("f", F.col("x").cast("float")))


def test_bitwise_equal_to_single_process_for_any_partitioning(spark):
    ref_df = frame(spark, 1).toPandas()
    refs = {c: puffer.add_noise(ref_df[c].to_numpy(np.float32 if c == "f" else np.float64), LAP,
                                rng=pio.column_stream(SEED, c)) for c in ("x", "k", "f")}
    for parts in (3,):  # other layouts: test_row_id_after_a_shuffle
        got = pspark.add_noise(frame(spark, parts), ["x", "k", "f"], LAP, seed=SEED).toPandas()
        assert got["id"].tolist() == list(range(N))
        for c in ("x", "k", "f"):
            assert np.array_equal(got[c].to_numpy(), refs[c]), (parts, c)
        assert got["f"].dtype == np.float32 and got["k"].dtype == np.float64


def test_row_id_after_a_shuffle(spark, tmp_path):
    df = frame(spark, 3).repartition(5, "k")  # rows move between partitions
    got = pspark.add_noise(df, ["x"], LAP, seed=SEED, row_id="id").toPandas().sort_values("id")
    base = frame(spark, 1).toPandas()
    ref = puffer.add_noise(base["x"].to_numpy(), LAP, rng=pio.column_stream(SEED, "x"))
    assert np.array_equal(got["x"].to_numpy(), ref)


def test_mechanism_file_and_secure_mode(spark, tmp_path):
    import json

    f = tmp_path / "fw.json"
    f.write_text(json.dumps({"model": {"kind": "correlated_pair"}, "target": {"eps": 1.0}}))
    m = pio.resolve(f).mechanism
    got = pspark.add_noise(frame(spark, 2), "x", f, seed=SEED).toPandas()
    ref = m.release(frame(spark, 1).toPandas()["x"].to_numpy(), rng=pio.column_stream(SEED, "x"))
    assert np.array_equal(got["x"].to_numpy(), ref)
    sec = pspark.add_noise(frame(spark, 2), "x", f, secure=True, granularity=2**-12).toPandas()
    y = sec["x"].to_numpy()
    assert np.all(y * 2**12 == np.round(y * 2**12))
    d = np.abs(y - got["x"].to_numpy())
    assert d.mean() > 0  # real noise, and not the seeded one


def test_bad_inputs(spark):
    df = frame(spark, 2).withColumn("s", F.lit("a"))
    with pytest.raises(ParameterError, match="'nope'"):
        pspark.add_noise(df, ["nope"], LAP, seed=1)
    with pytest.raises(ParameterTypeError, match="column 's'"):
        pspark.add_noise(df, ["s"], LAP, seed=1)
    dup = df.withColumn("rid", (F.col("id") % 10))
    with pytest.raises(ParameterError, match="duplicates"):
        pspark.add_noise(dup, ["x"], LAP, seed=1, row_id="rid")
    with pytest.raises(ParameterError, match=">= 0"):
        pspark.add_noise(df.withColumn("rid", -F.col("id") - 1), ["x"], LAP, seed=1, row_id="rid")
    nul = df.withColumn("x", F.when(F.col("id") == 5, F.lit(None)).otherwise(F.col("x")))
    with pytest.raises(Exception, match="null at row 5"):
        pspark.add_noise(nul, ["x"], LAP, seed=1).collect()
    kept = pspark.add_noise(nul, ["x"], LAP, seed=1, nulls="keep").toPandas()
    assert np.isnan(kept["x"][5]) and kept["x"].isna().sum() == 1
    with pytest.raises(ParameterTypeError, match="df"):
        pspark.add_noise(df.toPandas(), ["x"], LAP, seed=1)
