"""Content digests of what a release reads and writes (recorded in its ledger entry).

* a file: ``sha256:<hex>`` of its bytes (:func:`sha256_file`);
* a Spark/Dask collection: the sha256 over the per-partition sha256 of each released column
  (:data:`DIGEST_NOTE`; :class:`PartDigest`, :func:`combine_digests`).

:func:`output_state` says whether the output a pending entry names is at its path with the
recorded digest (how a killed run's pending entry is resolved).
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import numpy as np

__all__ = ["sha256_file", "output_state", "DIGEST_NOTE", "column_bytes", "PartDigest", "combine_digests"]

DIGEST_NOTE = ("sha256 over the per-partition sha256 of each released column (values as little-endian "
               "float64/int64 or UTF-8 text, row order), partitions in order")


def sha256_file(path: str | os.PathLike[str]) -> str:
    """'sha256:<hex>' of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for blk in iter(lambda: fh.read(1 << 22), b""):
            h.update(blk)
    return "sha256:" + h.hexdigest()


def output_state(e: dict[str, Any]) -> str:
    """Whether the output a pending entry names is there with the recorded digest:
    "published", "different" or "absent"."""
    path, digest = e.get("output"), e.get("output_sha256")
    if not isinstance(path, str) or not os.path.isfile(path):
        return "absent"
    try:
        return "published" if sha256_file(path) == digest else "different"
    except OSError:
        return "absent"


def column_bytes(arr: Any) -> bytes:
    """Canonical bytes of one Arrow/numpy/pandas column for the content digests."""
    if type(arr).__module__.startswith("pyarrow"):
        arr = arr.to_numpy(zero_copy_only=False)
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        return np.ascontiguousarray(a, dtype="<f8").tobytes()
    if a.dtype.kind in "iub":
        return np.ascontiguousarray(a, dtype="<i8").tobytes()
    return "\x00".join("\x01" if v is None else str(v) for v in a.tolist()).encode("utf-8") + b"\x00"


class PartDigest:
    """Incremental digest of one partition: one sha256 per column plus the row count."""

    def __init__(self, columns: list[str]) -> None:
        self.columns = list(columns)
        self.h = {c: hashlib.sha256() for c in columns}
        self.rows = 0

    def update(self, get: Any, n: int) -> None:
        for c in self.columns:
            self.h[c].update(column_bytes(get(c)))
        self.rows += int(n)

    def result(self) -> list[int | str]:
        return [self.rows] + [self.h[c].hexdigest() for c in self.columns]


def combine_digests(parts: list[list[Any]]) -> str:
    """'sha256:<hex>' of the per-partition digests in partition order (see :data:`DIGEST_NOTE`)."""
    h = hashlib.sha256(b"puffer/v1/frame-digest\x00")
    h.update(json.dumps(parts, separators=(",", ":")).encode("ascii"))
    return "sha256:" + h.hexdigest()
