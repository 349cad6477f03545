"""The guarantee ledger: one JSON object per line, one line per release.

A plain, serialisable record of what was released (in the spirit of dp_accounting's
``DpEvent``): the mechanism and its framework digest, the sensitivity with its witness, the
noise family and scale, the guarantee (loadable with :func:`puffer.guarantee_from_dict`), the
columns, the row count, the rng mode, a fingerprint of the seed (never the seed; nothing at all
in secure mode), the puffer version, the input/output paths and the output's sha256.

An existing ledger is checked before anything is computed: a line that is not a JSON object
is an error naming the file and the line, and nothing is appended to a corrupt ledger.
"""
from __future__ import annotations

import json
import os

from ..errors import ParameterError

__all__ = ["read_ledger", "append_ledger", "LEDGER_VERSION"]

LEDGER_VERSION = 1


def read_ledger(path: str | os.PathLike) -> list[dict]:
    """The entries of a ledger file (an absent file has none).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "ledger.jsonl")
    >>> _ = open(p, "w").write('{"a": 1}\\nnot json\\n')
    >>> read_ledger(p)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'ledger' = ...: expected JSON lines (one JSON object per line); ...
    """
    p = os.fspath(path)
    if not os.path.exists(p):
        return []
    out = []
    try:
        with open(p, encoding="utf-8") as fh:
            for k, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    e = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ParameterError("ledger", p, f"JSON lines (one JSON object per line); line {k} is not: "
                                         f"{exc.msg}") from None
                if not isinstance(e, dict):
                    raise ParameterError("ledger", p, f"JSON lines (one JSON object per line); line {k} is a "
                                         f"{type(e).__name__}")
                out.append(e)
    except UnicodeDecodeError:
        raise ParameterError("ledger", p, "a UTF-8 text file of JSON lines") from None
    except IsADirectoryError:
        raise ParameterError("ledger", p, "a file, not a directory") from None
    return out


def append_ledger(path: str | os.PathLike, entry: dict) -> None:
    """Append one entry (checked to round-trip through JSON) as one line, fsync'ed."""
    line = json.dumps(entry, sort_keys=True, allow_nan=False)
    if "\n" in line:  # cannot happen with json.dumps defaults; keeps the one-line contract explicit
        raise ParameterError("entry", entry, "an entry that serialises to one line")
    p = os.fspath(path)
    with open(p, "ab") as fh:
        if fh.tell() > 0:  # a last line without its newline must not swallow ours
            with open(p, "rb") as rd:
                rd.seek(-1, os.SEEK_END)
                if rd.read(1) != b"\n":
                    fh.write(b"\n")
        fh.write((line + "\n").encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())
