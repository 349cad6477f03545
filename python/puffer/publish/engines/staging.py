"""The staging file of a file release: the output before its ledger entry exists.

Threat: anyone who can list the output's folder (a sync job, a backup, another user, the next
pipeline step's ``*.parquet`` glob) must never find a complete noisy output without its ledger
entry, a release the totals never count. So the staging file

* is created by one run alone (``O_CREAT | O_EXCL | O_NOFOLLOW``) with mode 0600 whatever the
  umask, named ``.NAME.puffer-incomplete-PID-RANDOM`` (a dot file, out of globs; the name says
  what it is);
* holds nothing usable before the pending entry is durable: :class:`StagingFile` writes every
  byte XOR-masked by a keystream (ChaCha20, RFC 8439) under a random 256-bit pad key and nonce
  drawn from the OS for this file and kept in memory only, and hashes the unmasked bytes while
  writing (SHA-256 of the final file, with no second read). No guess completes it: holding
  back Parquet's closing ``PAR1`` alone (as before) left a file that one 4-byte append made
  readable, and even a footer written by hand would not help without the pad, since the data
  pages themselves are masked. A killed run's staging file stays masked (the pad dies with the
  process);
* :meth:`StagingFile.publish` then unmasks the file in place (read, XOR, write, 1 MiB at a
  time), fsyncs, gives the file the mode a new file gets (0666 less the umask) and renames it
  into place;
* is removed on any error, and a killed run's staging file (also the earlier
  ``.NAME.puffer-tmp-PID`` names) by the next release into the folder, whatever its output
  (:func:`clean_stale`): a staging file is live only while its output's lock
  (``.NAME.puffer-lock``, held for the whole release) is held.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import secrets
import stat
from collections.abc import Callable
from typing import Any

from .._files import fsync_dir

__all__ = ["StagingFile", "clean_stale", "STAGING"]

STAGING = ".puffer-incomplete-"   # the marker of a staging file's name
_LEGACY = ".puffer-tmp-"          # the marker before (complete files, readable by all)
_CHUNK = 1 << 20                  # bytes unmasked at a time in publish()


def _pad(key: bytes, nonce: bytes) -> Any:
    """A ChaCha20 keystream XOR (RFC 8439) under ``key`` (32 bytes) and ``nonce`` (16 bytes:
    counter and nonce, as the ``cryptography`` package takes them), applied in stream order."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    return Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else by setting it back at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    m = os.umask(0o022)
    os.umask(m)
    return m


class StagingFile:
    """A write-only, sequential staging file for ``dst`` (see the module docstring), usable as
    the file object of a ``pyarrow.parquet.ParquetWriter``. ``path``: its name; ``published``:
    True once renamed to ``dst``."""

    def __init__(self, dst: str) -> None:
        self.dst = os.path.abspath(dst)
        folder, base = os.path.dirname(self.dst), os.path.basename(self.dst)
        self.path = os.path.join(folder, f".{base}{STAGING}{os.getpid()}-{secrets.token_hex(4)}")
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.fchmod(self.fd, 0o600)  # whatever the umask
        self._raw = io.FileIO(self.fd, "wb", closefd=False)  # unbuffered: every byte on disk at fsync
        self._hash = hashlib.sha256()
        # the pad: in memory only, never written anywhere (module docstring)
        self._pad_key, self._pad_nonce = os.urandom(32), os.urandom(16)
        self._mask = _pad(self._pad_key, self._pad_nonce)
        self._size = 0
        self._digest: str | None = None
        self.published = False

    def __repr__(self) -> str:
        return f"StagingFile({self.path!r}, {self._size} bytes, published={self.published})"

    # -- the file protocol pyarrow uses ----------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._digest is not None

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False  # the hash is over the bytes in the order written

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass  # the writer closing its sink; finish() and publish() end the file

    def _out(self, mv: memoryview) -> None:
        while len(mv):
            mv = mv[self._raw.write(mv) or 0:]

    def write(self, data: Any) -> int:
        if self._digest is not None:
            raise ValueError("write to a finished staging file")
        mv = memoryview(data).cast("B")
        n = len(mv)
        if n:
            self._hash.update(mv)
            self._out(memoryview(self._mask.update(mv)))
        self._size += n
        return n

    # -- the release's steps -----------------------------------------------------------------------
    def finish(self) -> str:
        """The whole stream written (masked) and fsync'd; returns 'sha256:<hex>' of the final
        (unmasked) file."""
        if self._digest is None:
            os.fsync(self.fd)
            self._digest = "sha256:" + self._hash.hexdigest()
        return self._digest

    def publish(self) -> None:
        """After the pending entry: unmask the file in place, fsync, the mode of a new file,
        rename to ``dst``, fsync the folder."""
        if self._digest is None:
            raise ValueError("publish() before finish()")
        unmask = _pad(self._pad_key, self._pad_nonce)
        off = 0
        while off < self._size:
            chunk = os.pread(self.fd, min(_CHUNK, self._size - off), off)
            if not chunk:
                raise OSError(5, "the staging file is shorter than what was written")
            plain = memoryview(unmask.update(chunk))
            done = 0
            while done < len(plain):
                done += os.pwrite(self.fd, plain[done:], off + done)
            off += len(chunk)
        os.fsync(self.fd)
        os.fchmod(self.fd, 0o666 & ~_umask())
        os.replace(self.path, self.dst)
        self.published = True
        fsync_dir(os.path.dirname(self.dst))

    def discard(self) -> None:
        """Remove the staging file (not published); the descriptor is closed by :meth:`close_fd`."""
        if not self.published:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)

    def close_fd(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def clean_stale(folder: str, own: str, busy: Callable[[str], bool]) -> list[str]:
    """Remove the staging files of killed runs in ``folder``, for every output: those of ``own``
    (whose lock the caller holds) and those of outputs whose lock no process holds
    (``busy(output)`` False). Returns the names removed."""
    removed = []
    own = os.path.abspath(own)
    for name in os.listdir(folder):
        if not name.startswith("."):
            continue
        marker = STAGING if STAGING in name else _LEGACY if _LEGACY in name else None
        if marker is None:
            continue
        out = os.path.join(folder, name[1:].rsplit(marker, 1)[0])
        if out != own and busy(out):
            continue  # that output's release is running
        path = os.path.join(folder, name)
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode) and not stat.S_ISLNK(os.lstat(path).st_mode):
                continue
            os.remove(path)
            removed.append(name)
        except FileNotFoundError:
            pass
    return removed
