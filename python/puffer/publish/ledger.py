"""The release ledger: append-only, hash-chained JSON lines (``puffer ledger verify``).

Format. One JSON object per line (keys sorted, compact). Entry ``i`` carries ``seq = i``,
``prev`` = SHA-256 of the bytes of line ``i - 1`` (64 zeros for the first line) and ``hash`` =
SHA-256 of its own canonical JSON without ``hash``. :func:`verify` recomputes both for every
line and names the first entry that fails: an edited field breaks that entry's ``hash`` (or,
if the forger recomputed it, the next entry's ``prev``), a deleted line or a swap breaks
``seq``/``prev``. What a chain cannot show: a forger who recomputes every later hash, or who
cuts whole entries off the end; keep the ``head`` that :func:`verify` prints somewhere else
and check it with ``verify(path, head=...)`` (``puffer ledger verify L --head H``).

Events. A publication writes two entries (see :mod:`puffer.publish.release`): ``pending`` (every
field of the release, the output's digest, made durable *before* the output appears at its
final path) and then ``completed``. A process killed in between leaves a pending entry
without completion; :func:`verify` reports it (with whether the output is there with that
digest) and the next release on the ledger resolves it with a ``resolved`` entry
(``published``, or ``unknown`` when the output is not there with its digest; a run that knows
it did not publish records ``aborted``). So no output is ever published without an entry.

Writing. Appends take an exclusive ``fcntl`` lock on the ledger file, write each line with a
single ``write`` and ``fsync`` the file (and the folder when the file is created). On a write
error (disk full) the file is truncated back to its previous length; if even that fails, the
torn last line (no newline) is recognised, reported by :func:`verify`, and removed by the next
append, which records the removed bytes' length and SHA-256 (``repaired_tail``).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

from ..errors import LedgerError, ParameterError, PufferIOError
from .digest import output_state

__all__ = ["Ledger", "LedgerError", "read_ledger", "append_ledger", "verify", "LEDGER_VERSION", "GENESIS",
           "default_ledger_path", "canonical"]

LEDGER_VERSION = 2
GENESIS = "0" * 64


def canonical(obj: Any) -> bytes:
    """The bytes an entry is hashed and written as (sorted keys, compact, ASCII, no NaN)."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False).encode("ascii")
    except (TypeError, ValueError) as exc:
        raise ParameterError("entry", repr(obj)[:80], f"a JSON-serialisable entry without NaN/inf ({exc})") from None


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def default_ledger_path(output: str | os.PathLike[str]) -> str:
    """``puffer-ledger.jsonl`` in the output's folder (the CLI's and the API's default)."""
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(output))), "puffer-ledger.jsonl")


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not every file system can fsync a folder
    finally:
        os.close(fd)


def _split(data: bytes) -> tuple[list[bytes], bytes]:
    """(complete lines without their newline, trailing bytes after the last newline)."""
    if not data:
        return [], b""
    parts = data.split(b"\n")
    return parts[:-1], parts[-1]


class Ledger:
    """One ledger file. ``entries()`` reads, ``append(entry)`` chains and writes one entry
    durably under the lock, ``locked()`` holds the lock across several steps."""

    def __init__(self, path: str | os.PathLike[str]):
        p = os.fspath(path)
        if not isinstance(p, str) or not p:
            raise ParameterError("ledger", path, "a file path")
        self.path = os.path.abspath(p)
        self._fd: int | None = None
        self._depth = 0

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"

    # ------------------------------------------------------------------ checks
    def check_writable(self) -> None:
        """Refuse (PufferIOError) a ledger that cannot be appended to: a missing or read-only
        folder, a read-only file, a folder at the path. Called before anything is published."""
        folder = os.path.dirname(self.path)
        if os.path.isdir(self.path):
            raise ParameterError("ledger", self.path, "a file, not a folder")
        if not os.path.isdir(folder):
            raise PufferIOError(self.path, "opening the ledger", "its folder does not exist")
        if os.path.exists(self.path):
            if not os.access(self.path, os.W_OK):
                raise PufferIOError(self.path, "opening the ledger", "the file is read-only")
        elif not os.access(folder, os.W_OK | os.X_OK):
            raise PufferIOError(self.path, "creating the ledger", "its folder is read-only")

    # ------------------------------------------------------------------ lock
    @contextlib.contextmanager
    def locked(self) -> Iterator[Ledger]:
        """Hold the ledger's exclusive lock (re-entrant within this object)."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        self.check_writable()
        created = not os.path.exists(self.path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise PufferIOError(self.path, "opening the ledger", exc.strerror or exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if created:
                _fsync_dir(os.path.dirname(self.path))
            self._fd, self._depth = fd, 1
            yield self
        finally:
            self._fd, self._depth = None, 0
            os.close(fd)  # releases the lock

    # ------------------------------------------------------------------ read
    def _data(self) -> bytes:
        try:
            with open(self.path, "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return b""
        except IsADirectoryError:
            raise ParameterError("ledger", self.path, "a file, not a folder") from None
        except OSError as exc:
            raise PufferIOError(self.path, "reading the ledger", exc.strerror or exc) from None

    def _parse(self, lines: list[bytes]) -> list[dict[str, Any]]:
        out = []
        for k, line in enumerate(lines):
            try:
                e = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise LedgerError(self.path, k, f"not a JSON object ({exc})") from None
            if not isinstance(e, dict):
                raise LedgerError(self.path, k, f"a JSON {type(e).__name__}, not an object")
            out.append(e)
        return out

    def entries(self, *, check: bool = True) -> list[dict[str, Any]]:
        """Every complete entry (a torn trailing line is left out); ``check`` verifies the chain."""
        lines, _ = _split(self._data())
        if check:
            self._verify_lines(lines)
        return self._parse(lines)

    # ------------------------------------------------------------------ verify
    def _verify_lines(self, lines: list[bytes]) -> str:
        prev = GENESIS
        entries = self._parse(lines)
        for k, (line, e) in enumerate(zip(lines, entries)):
            if e.get("seq") != k:
                raise LedgerError(self.path, k, f"seq is {e.get('seq')!r}, expected {k}: an entry was deleted, "
                                  "inserted or moved")
            if e.get("prev") != prev:
                raise LedgerError(self.path, k, "prev does not match the SHA-256 of the entry before it: that "
                                  "entry was edited, or entries were deleted or reordered")
            body = {kk: v for kk, v in e.items() if kk != "hash"}
            if e.get("hash") != _sha(canonical(body)):
                raise LedgerError(self.path, k, "its hash does not match its content: the entry was edited")
            if line != canonical(e):
                raise LedgerError(self.path, k, "not in canonical form: the entry was rewritten")
            prev = _sha(line)
        return prev

    def verify(self, *, head: str | None = None, check_outputs: bool = True) -> dict[str, Any]:
        """Check the whole chain; raise :class:`LedgerError` naming the first bad entry.

        Returns ``{"ok", "entries", "head", "releases", "pending", "torn_tail"}``: ``pending``
        lists releases with a pending entry and no completion, each with ``output_state``
        ("published": the output is there with the recorded digest; "absent"; "different")."""
        data = self._data()
        lines, tail = _split(data)
        h = self._verify_lines(lines)
        if head is not None and head != h:
            raise LedgerError(self.path, len(lines) - 1 if lines else 0,
                              f"the last entry's hash is {h}, not the recorded head {head}: entries were "
                              "cut off the end or the chain was rewritten")
        entries = self._parse(lines)
        state = release_states(entries)
        pending = []
        for rid, st in state.items():
            if st["status"] != "pending":
                continue
            e = st["entry"]
            item = {"release_id": rid, "entry": st["seq"], "output": e.get("output")}
            if check_outputs:
                item["output_state"] = output_state(e)
            pending.append(item)
        torn = None
        if tail:
            torn = {"bytes": len(tail), "note": "a torn last line (an interrupted append): it is not an entry "
                                                "and the next append removes it"}
        return {"ok": True, "ledger": self.path, "entries": len(lines), "head": h,
                "releases": sum(1 for s in state.values() if s["status"] in ("completed", "published")),
                "pending": pending, "torn_tail": torn}

    # ------------------------------------------------------------------ append
    def append(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Chain ``entry`` (adds seq, prev, hash) and write it durably; returns the written entry."""
        if not isinstance(entry, dict):
            raise ParameterError("entry", entry, "a dict")
        with self.locked():
            fd = self._fd
            assert fd is not None
            data = self._data()
            lines, tail = _split(data)
            head = self._verify_lines(lines)  # never append to a broken chain
            e = {k: v for k, v in entry.items() if k not in ("seq", "prev", "hash")}
            if tail:
                e["repaired_tail"] = {"bytes": len(tail), "sha256": _sha(tail)}
            e.update(seq=len(lines), prev=head)
            e["hash"] = _sha(canonical(e))
            line = canonical(e) + b"\n"
            good = len(data) - len(tail)
            try:
                if tail:
                    os.ftruncate(fd, good)
                n = os.write(fd, line)
                if n != len(line):
                    raise OSError(errno.ENOSPC, "short write (disk full?)")
                os.fsync(fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, good)
                    os.fsync(fd)
                raise PufferIOError(self.path, "appending to the ledger", exc.strerror or exc) from None
            return e


def release_states(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """release_id -> {"status": pending/completed/published/unknown/aborted, "entry": the pending
    entry, "seq"}."""
    out: dict[str, dict[str, Any]] = {}
    for e in entries:
        ev, rid = e.get("event"), e.get("release_id")
        if rid is None:
            continue
        if ev == "pending":
            out[rid] = {"status": "pending", "entry": e, "seq": e.get("seq")}
        elif ev == "completed" and rid in out:
            out[rid]["status"] = "completed"
        elif ev == "resolved" and rid in out:
            out[rid]["status"] = e.get("outcome", "published")
    return out


def verify(path: str | os.PathLike[str], *, head: str | None = None) -> dict[str, Any]:
    """:meth:`Ledger.verify` of ``path`` (raises :class:`LedgerError` naming the first bad entry).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "ledger.jsonl")
    >>> _ = append_ledger(p, {"note": "a"}); _ = append_ledger(p, {"note": "b"})
    >>> verify(p)["entries"]
    2
    >>> text = open(p).read(); _ = open(p, "w").write(text.replace('"a"', '"c"'))
    >>> verify(p)
    Traceback (most recent call last):
    ...
    puffer.errors.LedgerError: ledger ...: entry 0 (line 1): its hash does not match its content: the entry was edited
    """
    return Ledger(path).verify(head=head)


def read_ledger(path: str | os.PathLike[str], *, check: bool = True) -> list[dict[str, Any]]:
    """The entries of a ledger file (an absent file has none); ``check`` verifies the chain first."""
    p = os.fspath(path)
    if not os.path.exists(p):
        return []
    return Ledger(p).entries(check=check)


def append_ledger(path: str | os.PathLike[str], entry: dict[str, Any]) -> dict[str, Any]:
    """Append one entry to the ledger at ``path`` (chained, locked, fsync'd); returns it."""
    return Ledger(path).append(entry)
