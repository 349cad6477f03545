"""The overhead of one release as its ledger grows (issue 38 §7): 10, 10^3, 10^4 entries.

A signed ledger of N entries is built directly (the entries a real release writes, copied with
fresh release ids, nonces and unit sets, chained and signed as Ledger.append does, with its
checkpoint), so that building it does not itself take N releases. Then one real release
(`puffer.io.noise_file`, 50 households of a Markov framework, --allow-uncomposed, units that
are registered) is timed into it: wall and CPU seconds (the machine is shared: CPU seconds are
the steadier figure), median of ``--repeat`` runs, each on a fresh copy of the ledger.

    python bench/ledger_overhead.py [--sizes 10 1000 10000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import puffer.io as pio
from puffer.publish.ledger import ENTRY_DOMAIN, GENESIS, _write_checkpoint, canonical, make_checkpoint
from puffer.publish.signing import load_signing_key

MARKOV = {"model": {"kind": "markov_chain", "T": 4, "trans": [[0.8, 0.2], [0.3, 0.7]]}, "target": {"eps": 1.0}}
REGIONS = 20   # the synthetic releases cycle over 20 regions of 50 households


def _readings(path: str, units: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed)
    hh = np.repeat(units, 4)
    pq.write_table(pa.table({"household": hh, "t": np.tile(np.arange(4), units.size),
                             "kwh": rng.integers(0, 2, hh.size).astype(float)}), path)


def build(folder: str, n_entries: int) -> dict[str, str]:
    """A signed ledger of ``n_entries`` entries (pairs pending + completed) in ``folder``."""
    fw = os.path.join(folder, "fw.json")
    with open(fw, "w") as fh:
        json.dump(MARKOV, fh)
    key, sk_path = os.path.join(folder, "k.key"), os.path.join(folder, "s.key")
    pio.keygen(key)
    pio.signing_keygen(sk_path)
    sk = load_signing_key(sk_path)
    led = os.path.join(folder, "l.jsonl")
    # two real releases give the templates (pending, completed) and the ledger's unit hasher
    src = os.path.join(folder, "r0.parquet")
    _readings(src, np.arange(50), 0)
    pio.noise_file(src, os.path.join(folder, "o0.parquet"), "kwh", fw, key=key, ledger=led, unit="household",
                   order="t", signing_key=sk_path)
    lines = open(led, "rb").read().splitlines()
    pend, comp = json.loads(lines[0]), json.loads(lines[1])
    from puffer.publish.unitsets import unit_hasher

    hasher = unit_hasher(led, sk)
    sets = [hasher.unit_set(np.arange(50 * r, 50 * r + 50)) for r in range(REGIONS)]
    out, prev = [], GENESIS
    for seq in range(n_entries):
        if seq % 2 == 0:
            e = dict(pend)
            rid = secrets.token_hex(16)
            data = np.ascontiguousarray(sets[(seq // 2) % REGIONS], dtype="<u8").tobytes()
            e.update(release_id=rid, nonce=secrets.token_hex(16), allow_uncomposed=True,
                     units={**pend["units"], "ids": base64.b64encode(data).decode("ascii"),
                            "sha256": hashlib.sha256(data).hexdigest()})
            e.pop("unit_registry", None)
        else:
            e = dict(comp)
            e["release_id"] = rid
        for k in ("seq", "prev", "hash", "sig"):
            e.pop(k, None)
        e.update(seq=seq, prev=prev)
        e["hash"] = h = hashlib.sha256(canonical(e)).hexdigest()
        e["sig"] = sk.sign(ENTRY_DOMAIN, bytes.fromhex(h))
        line = canonical(e)
        out.append(line)
        prev = hashlib.sha256(line).hexdigest()
    with open(led, "wb") as fh:
        fh.write(b"".join(ln + b"\n" for ln in out))
    for side in (led + ".index",):
        if os.path.exists(side):
            os.remove(side)
    _write_checkpoint(led + ".checkpoint", make_checkpoint(led, len(out), prev, sk))
    src = os.path.join(folder, "in.parquet")
    _readings(src, np.arange(50), 1)  # region 0: registered units
    return {"ledger": led, "key": key, "sign": sk_path, "fw": fw, "src": src}


def one_release(b: dict[str, str], out: str) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    pio.noise_file(b["src"], out, "kwh", b["fw"], key=b["key"], ledger=b["ledger"], unit="household", order="t",
                   signing_key=b["sign"], allow_uncomposed=True)
    return time.perf_counter() - t0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print("| entries in the ledger | release wall s (median) | release CPU s (median) | first release without "
          "an index: wall s | CPU s |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        base = tempfile.mkdtemp(prefix=f"puffer-ledger-{n}-")
        try:
            b = build(base, n)
            # the first release into a ledger without an index verifies every entry and writes it
            first = one_release(b, os.path.join(base, "first.parquet"))
            walls, cpus = [], []
            for _ in range(args.repeat):  # then: a release in a fresh process state, index present
                work = tempfile.mkdtemp(dir=base)
                bb = dict(b, ledger=os.path.join(work, "l.jsonl"))
                for ext in ("", ".checkpoint", ".index"):
                    if os.path.exists(b["ledger"] + ext):  # (code before the index: no .index)
                        shutil.copy(b["ledger"] + ext, bb["ledger"] + ext)
                w, c = one_release(bb, os.path.join(work, "o.parquet"))
                walls.append(w)
                cpus.append(c)
            print(f"| {n} | {statistics.median(walls):.3f} | {statistics.median(cpus):.3f} | {first[0]:.3f} | "
                  f"{first[1]:.3f} |", flush=True)
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
