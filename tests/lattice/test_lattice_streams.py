"""Keyed lattice noise against stored streams (issue 41, item 1): the integers of lattice_integers
and the ChaCha20 words and hints of the lattice fast blocks, for fixed keys, words (nonces) and
positions, are those stored in tests/data/lattice_streams.json, on every SIMD target and thread
count. The file was written with the samplers of commit 02b5358 (before any vectorisation of the
keystream or of the inversion), so a faster sampler must reproduce the streams bit for bit.

Oracle: the stored streams (SHA-256 of the little-endian int64 / uint64 / float64 bytes, and the
first values in clear). `python tests/lattice/test_lattice_streams.py` rewrites the file; run it
only for a deliberate change of the streams (a new stream version), never to make this test pass.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from puffer import _core, sampling
from puffer.lattice import LatticeLaw, lattice_integers
from puffer.sampling import KeyedStream

DATA = Path(__file__).resolve().parents[1] / "data" / "lattice_streams.json"
KEYS = {"ascending": bytes(range(32)), "mixed": hashlib.sha256(b"puffer issue 41").digest()}
# (family, scale): both laws, scales from below one lattice step to far above it
LAWS = [("laplace", 0.4), ("laplace", 3.0), ("laplace", 1025.0), ("laplace", 1e6),
        ("gaussian", 0.7), ("gaussian", 7.0), ("gaussian", 6e4)]
# (word, start position, count): position 0, an odd offset inside a block, one past 2^32
STREAMS = [(0, 0, 20_011), (7, 13, 5_003), (3, 2**32 + 5, 4_099)]
BLOCKS = [(0, 0, 64), (5, 2**20 + 3, 33)]   # keyed_lattice_fill: (word, first block, blocks)


@pytest.fixture(autouse=True)
def _restore_target():
    yield
    sampling.set_simd_target("auto")


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()


def _integers(key: str, family: str, scale: float, word: int, start: int, n: int, threads: int) -> np.ndarray:
    s = KeyedStream(KEYS[key], word=word)
    s.position = start
    return lattice_integers(LatticeLaw.for_scale(family, scale), n, rng=s, threads=threads)


def _words(key: str, word: int, j0: int, nb: int, log_scale: float) -> tuple[np.ndarray, np.ndarray]:
    w, h = _core.sampling.keyed_lattice_fill(KEYS[key], word, j0, nb, log_scale)
    return w, h


def _cases() -> list[dict]:
    out = []
    for key in KEYS:
        for family, scale in LAWS:
            for word, start, n in STREAMS:
                out.append({"kind": "integers", "key": key, "family": family, "scale": scale, "word": word,
                            "start": start, "n": n})
        for word, j0, nb in BLOCKS:
            for log_scale in (0.0, 5.5):
                out.append({"kind": "blocks", "key": key, "word": word, "j0": j0, "nb": nb, "log_scale": log_scale})
    return out


def _compute(case: dict, threads: int = 1) -> dict:
    if case["kind"] == "integers":
        z = _integers(case["key"], case["family"], case["scale"], case["word"], case["start"], case["n"], threads)
        return {"sha256": _digest(z), "head": z[:16].tolist()}
    # the words only: the hints are floating-point guesses of a table index (they differ by a
    # rounding between targets; the integers above, which they only speed up, do not)
    w, _ = _words(case["key"], case["word"], case["j0"], case["nb"], case["log_scale"])
    return {"sha256": _digest(w), "head": [str(x) for x in w[:8]]}


def _stored() -> list[dict]:
    return json.loads(DATA.read_text())["cases"]


def test_the_stored_file_covers_every_case():
    stored = _stored()
    assert [{k: v for k, v in c.items() if k != "expect"} for c in stored] == _cases()


@pytest.mark.parametrize("target", sampling.simd_targets())
def test_streams_equal_the_stored_ones_on_every_target(target):
    sampling.set_simd_target(target)
    for case in _stored():
        want = case["expect"]
        for threads in ((1, 2) if case["kind"] == "integers" else (1,)):
            got = _compute(case, threads)
            assert got == want, (target, threads, {k: v for k, v in case.items() if k != "expect"})


if __name__ == "__main__":   # rewrite tests/data/lattice_streams.json (see the module docstring)
    sampling.set_simd_target("auto")
    DATA.write_text(json.dumps({"written_by": "tests/lattice/test_lattice_streams.py",
                                "cases": [dict(c, expect=_compute(c)) for c in _cases()]}, indent=0) + "\n")
    print(f"wrote {DATA}")
