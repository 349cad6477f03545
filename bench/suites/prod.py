"""Production paths (issue 16): Parquet -> noisy Parquet (puffer.io vs the pandas + numpy way a
user would write it), and Spark local[2] (puffer's mapInArrow path vs a numpy pandas-UDF).

Each file contender runs in its own Python process so its peak memory (ru_maxrss) is its own;
both write snappy-compressed Parquet. The Spark contenders run in one session, interleaved,
best of 3, and write to Spark's ``noop`` sink (the cost is reading + noise + Arrow transfer).
"""
# no `from __future__ import annotations`: pandas_udf reads the type hints at run time

import json
import os
import subprocess
import sys
import tempfile
import time

TITLE = "Production: Parquet ETL and Spark (issue 16)"

_CHILD = r"""
import json, resource, sys, time
which, src, dst = sys.argv[1:4]
if which == "puffer":
    import os, puffer.io
    key, led = dst + ".key", dst + ".ledger.jsonl"   # seeds are refused: a release key and a ledger
    for p in (key, led, led + ".checkpoint"):
        if os.path.exists(p):
            os.remove(p)
    puffer.io.keygen(key)
    t0 = time.perf_counter()  # after the imports: the table compares the work, not start-up
    puffer.io.noise_file(src, dst, ["x"], ("laplace", {"b": 1.0}), key=key, ledger=led, compression="snappy",
                         progress=False)
else:
    import numpy as np, pandas as pd, pyarrow.parquet
    t0 = time.perf_counter()
    df = pd.read_parquet(src)
    df["x"] = df["x"] + np.random.default_rng(1).laplace(scale=1.0, size=len(df))
    df.to_parquet(dst, compression="snappy")
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _make_input(path: str, n: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    chunk = 1 << 22
    schema = pa.schema([("x", pa.float64())])
    with pq.ParquetWriter(path, schema, compression="snappy") as w:
        for lo in range(0, n, chunk):
            m = min(chunk, n - lo)
            w.write_table(pa.table({"x": rng.normal(size=m)}), row_group_size=1 << 20)


def _file_table(ctx) -> dict:
    n = 10_000_000 if ctx.quick else 100_000_000
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("PUFFER_BENCH_TMP")) as d:
        src = os.path.join(d, "in.parquet")
        _make_input(src, n)
        size = os.path.getsize(src) / 2**20
        res = {}
        for which in ("puffer", "pandas", "puffer", "pandas"):  # interleaved, best of 2
            dst = os.path.join(d, f"out-{which}.parquet")
            out = subprocess.run([sys.executable, "-c", _CHILD, which, src, dst], check=True, capture_output=True,
                                 text=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            best = res.get(which)
            res[which] = r if best is None or r["seconds"] < best["seconds"] else \
                {**best, "maxrss_mb": max(best["maxrss_mb"], r["maxrss_mb"])}
            os.remove(dst)
    base = res["pandas"]["seconds"]
    for which, label in (("puffer", "puffer.io.noise_file (batches of 2^18 rows, row groups of 2^20, output sha256)"),
                         ("pandas", "pandas.read_parquet + numpy Generator.laplace + to_parquet")):
        r = res[which]
        rows.append([label, f"{r['seconds']:.2f}", f"{n / r['seconds'] / 1e6:.1f}", f"{r['maxrss_mb']:.0f}",
                     f"{base / r['seconds']:.2f}x"])
    return {"title": f"Parquet -> noisy Parquet, {n:.0e} float64 values (one column, {size:.0f} MiB snappy)",
            "columns": ["contender", "seconds", "M rows/s", "peak RSS MiB", "speed vs pandas"], "rows": rows,
            "notes": "Each contender in a fresh process (peak RSS = its ru_maxrss, interpreter and libraries "
                     "included; time from after the imports to the closed output file); Laplace b = 1; "
                     "best of 2 interleaved runs. puffer's output is the same "
                     "bytes for any batch size and thread count; the pandas recipe holds the whole column "
                     "(and its noise) in memory."}


def _spark_table(ctx) -> dict:
    import numpy as np
    import pandas as pd
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import puffer.spark

    n = 2_000_000 if ctx.quick else 20_000_000
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2]").appName("puffer-bench").config("spark.ui.enabled", "false")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.driver.memory", "4g").getOrCreate())
    try:
        df = spark.range(0, n, numPartitions=4).withColumn("x", F.rand(1))

        def udf_frames(it):
            for pdf in it:
                rng = np.random.default_rng()
                pdf["x"] = pdf["x"] + rng.laplace(scale=1.0, size=len(pdf))
                yield pdf

        @F.pandas_udf("double")
        def laplace_udf(x: pd.Series) -> pd.Series:
            return x + np.random.default_rng().laplace(scale=1.0, size=len(x))

        import itertools
        import tempfile

        led, runs = tempfile.mkdtemp(prefix="puffer-bench-"), itertools.count()

        def release(**kw):  # a fresh key and ledger per run (every call is a release)
            path = os.path.join(led, f"ledger-{next(runs)}.jsonl")
            return puffer.spark.add_noise(df, ["x"], ("laplace", {"b": 1.0}), key=os.urandom(32), ledger=path, **kw)

        contenders = {
            "puffer.spark.add_noise, positional row ids (mapInArrow; checkpoints, digests, ledger)":
                lambda: release(),
            "puffer.spark.add_noise, row_id='id' (mapInArrow; + the uniqueness check)":
                lambda: release(row_id="id"),
            "numpy pandas_udf (Series -> Series, Generator.laplace)":
                lambda: df.withColumn("x", laplace_udf("x")),
            "numpy mapInPandas (Generator.laplace)":
                lambda: df.mapInPandas(udf_frames, df.schema),
        }
        times: dict[str, float] = {}
        for _ in range(2 if ctx.quick else 3):
            for name, make in contenders.items():
                t0 = time.perf_counter()
                make().write.format("noop").mode("overwrite").save()
                dt = time.perf_counter() - t0
                times[name] = min(times.get(name, dt), dt)
        base = times["numpy pandas_udf (Series -> Series, Generator.laplace)"]
        rows = [[name, f"{t:.2f}", f"{n / t / 1e6:.2f}", f"{base / t:.2f}x"] for name, t in times.items()]
        import pyspark
        return {"title": f"Spark local[2]: Laplace noise on {n:.0e} rows (pyspark {pyspark.__version__})",
                "columns": ["contender", "seconds", "M rows/s", "speed vs pandas_udf"], "rows": rows,
                "notes": "spark.range(n, 4 partitions) + rand column, written to the noop sink; best of 3 "
                         "interleaved runs. The numpy baselines are not reproducible (fresh Generator per "
                         "batch); puffer's output is bitwise equal to puffer.add_noise on the collected column."}
    finally:
        spark.stop()


def run(ctx) -> list[dict]:
    return [_file_table(ctx), _spark_table(ctx)]
