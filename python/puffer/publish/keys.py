"""Release keys: the secret every published noise is derived from (``puffer keygen``).

A release is keyed by a secret of 256 bits (at least 128 accepted). It comes from

* a key file written by :func:`keygen` (``puffer keygen PATH``): JSON with the key (hex) and a
  *random* key id, mode 0600, never overwritten; :func:`load_key` refuses a file that the group
  or others may read, of the wrong size or format;
* bytes given in the API (at least 16 bytes; a random key id is drawn for the object);
* nothing: fresh OS entropy (``os.urandom``), the default. Such a release cannot be re-run
  (the key is not kept anywhere), which is the safe default.

The key id is drawn at random, independently of the key, so the ledger, which records only the
id, gives nothing to search offline. A small integer seed is refused in every publishing path
(it can be found by trying seeds, and then every noise value and every true value follow);
tests may opt in with ``insecure_seed=`` and the release is then recorded as insecure.
"""
from __future__ import annotations

import json
import os
import secrets as _secrets
import stat
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError, ParameterTypeError, PufferIOError

__all__ = ["Key", "keygen", "load_key", "as_key", "KEY_BYTES", "MIN_KEY_BYTES", "SEED_REFUSED"]

KEY_BYTES = 32          # what keygen writes (256 bits)
MIN_KEY_BYTES = 16      # the least a key may have (128 bits)
_FORMAT = "puffer-key-v1"

#: the message of every refusal of a small integer seed in a publishing path
SEED_REFUSED = ("a secret key, not an integer seed: a seed can be found by trying seeds, and then every "
                "true value follows from the published ones. Create a key with `puffer keygen PATH` and pass "
                "key=PATH (or --key PATH), or leave the key out for fresh OS entropy (not re-runnable)")


@dataclass(frozen=True)
class Key:
    """A release key: ``secret`` (bytes, never printed), ``key_id`` (random, recorded in the
    ledger), ``source`` ("file", "bytes", "os-entropy" or "insecure-seed"), ``insecure``
    (True only for the tests' ``insecure_seed=`` opt-in), ``path`` (for a key file)."""

    secret: bytes = field(repr=False)
    key_id: str
    source: str
    insecure: bool = False
    path: str | None = None

    @property
    def rerunnable(self) -> bool:
        """Whether a release under this key can be reproduced later (not for OS entropy)."""
        return self.source != "os-entropy"

    def describe(self) -> dict[str, Any]:
        """What the ledger records: the id and where the key came from, nothing derived from it."""
        return {"key_id": self.key_id, "source": self.source, "insecure": self.insecure,
                "rerunnable": self.rerunnable}

    def __repr__(self) -> str:
        return f"Key(key_id={self.key_id!r}, source={self.source!r}{', insecure' if self.insecure else ''})"


def _new_id() -> str:
    return _secrets.token_hex(16)


def keygen(path: str | os.PathLike[str]) -> Key:
    """Write a new 256-bit key with a random id to ``path`` (mode 0600; an existing file is
    never overwritten) and return it.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "release.key")
    >>> k = keygen(p)
    >>> oct(os.stat(p).st_mode & 0o777), load_key(p).key_id == k.key_id
    ('0o600', True)
    """
    p = os.fspath(path)
    if not isinstance(p, str):
        raise ParameterTypeError("path", path, "a file path")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder):
        raise ParameterError("path", p, "a path in an existing folder")
    key = Key(os.urandom(KEY_BYTES), _new_id(), "file", path=os.path.abspath(p))
    doc = json.dumps({"format": _FORMAT, "key_id": key.key_id, "key": key.secret.hex()}) + "\n"
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ParameterError("path", p, "a path where no file exists (a key is never overwritten)") from None
    except OSError as exc:
        raise PufferIOError(p, "creating the key file", exc.strerror or exc) from None
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, doc.encode())
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        os.unlink(p)
        raise PufferIOError(p, "writing the key file", exc.strerror or exc) from None
    os.close(fd)
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # some file systems cannot fsync a folder; the key file itself is durable
    return key


def load_key(path: str | os.PathLike[str]) -> Key:
    """The key of a file written by :func:`keygen`; refused if group/world readable or malformed."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise ParameterError("key", p, "an existing key file (create one with `puffer keygen PATH`)") from None
    except OSError as exc:
        raise PufferIOError(p, "reading the key file", exc.strerror or exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError("key", p, "a regular key file")
    if st.st_mode & 0o077:
        raise ParameterError("key", p, f"a key file only its owner can access (mode is "
                             f"{oct(st.st_mode & 0o777)}; run `chmod 600 {p}`)")
    try:
        with open(p, encoding="utf-8") as fh:
            text = fh.read(4096)
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError("key", p, f"a readable key file ({exc})") from None
    try:
        doc = json.loads(text)
        ok = isinstance(doc, dict) and doc.get("format") == _FORMAT and set(doc) == {"format", "key_id", "key"}
        secret = bytes.fromhex(doc["key"]) if ok else b""
        kid = doc["key_id"] if ok else ""
    except (ValueError, TypeError, KeyError):
        ok, secret, kid = False, b"", ""
    if not ok or not isinstance(kid, str) or len(kid) != 32:
        raise ParameterError("key", p, "a key file written by `puffer keygen` (JSON with format, key_id, key)")
    if len(secret) < MIN_KEY_BYTES:
        raise ParameterError("key", p, f"a key of at least {MIN_KEY_BYTES} bytes (it has {len(secret)})")
    return Key(secret, kid, "file", path=os.path.abspath(p))


def as_key(key: Any = None, *, insecure_seed: Any = None) -> Key:
    """The :class:`Key` a ``key=`` argument stands for: None (fresh OS entropy), a key file path,
    key bytes (>= 16) or a :class:`Key`. An integer is refused (see :data:`SEED_REFUSED`).
    ``insecure_seed`` (tests only): a non-negative int whose key is recorded as insecure.

    >>> as_key(b"0123456789abcdef").source
    'bytes'
    >>> as_key(7)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterTypeError: parameter 'key' = 7 (type int): expected a secret key, ...
    """
    import hashlib
    import numbers

    if insecure_seed is not None:
        if key is not None:
            raise ParameterError("insecure_seed", insecure_seed, "None when key= is given")
        if isinstance(insecure_seed, bool) or not isinstance(insecure_seed, numbers.Integral) or insecure_seed < 0:
            raise ParameterTypeError("insecure_seed", insecure_seed, "a non-negative integer (tests only)")
        secret = hashlib.sha256(b"puffer insecure test seed v1\x00" + str(int(insecure_seed)).encode()).digest()
        return Key(secret, _new_id(), "insecure-seed", insecure=True)
    if key is None:
        return Key(os.urandom(KEY_BYTES), _new_id(), "os-entropy")
    if isinstance(key, Key):
        return key
    if isinstance(key, (bytes, bytearray, memoryview)):
        b = bytes(key)
        if len(b) < MIN_KEY_BYTES:
            raise ParameterError("key", f"{len(b)} bytes", f"at least {MIN_KEY_BYTES} bytes (128 bits) of secret "
                                 "key (`puffer keygen PATH` writes 32)")
        return Key(b, _new_id(), "bytes")
    if isinstance(key, (str, os.PathLike)):
        return load_key(key)
    if isinstance(key, numbers.Integral) or hasattr(key, "__index__"):
        raise ParameterTypeError("key", key, SEED_REFUSED)
    raise ParameterTypeError("key", key, "a key file path, the key's bytes (>= 16), a puffer.io.Key or None")


def refuse_seed(seed: Any) -> None:
    """The error every publishing path raises for ``seed=`` (kept as a keyword only to say why)."""
    if seed is not None:
        raise ParameterError("seed", seed, SEED_REFUSED)
