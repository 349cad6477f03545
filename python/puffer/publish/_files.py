"""Files shared by the publishing modules (keys, ledgers, checkpoints, unit sets): durable
writes, owner-only secrets, paths shown without key material and strict JSON reads."""
from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from typing import Any

from ..errors import ParameterError, PufferIOError

__all__ = ["fsync_dir", "read_regular", "write_new", "check_private", "loads", "STRICT_JSON", "shown_path"]

# what a key path shown in a message may be made of (ASCII: raw key bytes decoded as text are
# almost never only these, (73/256)^32 < 1e-17), and what reads as encoded key material: a hex run,
# or a base64/base64url text (no dot) of two character classes
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/~+=,@: -]*")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{16,}")
_B64_TEXT = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")


def fsync_dir(folder: str) -> None:
    """fsync a folder (so that a file created or renamed in it survives a crash); file systems
    that cannot fsync a folder are let be: the files themselves are durable."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_regular(path: str, limit: int = -1) -> bytes:
    """The bytes of a regular file (at most ``limit``). A FIFO planted where a ledger, checkpoint
    or unit set is expected would block the open or the read for ever, and a device never end:
    both raise OSError (EINVAL) as a directory raises IsADirectoryError, so callers report them
    as unreadable files. The open does not wait for a FIFO's writer (O_NONBLOCK)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "a folder, not a file", path)
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)", path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            return fh.read(limit)
    finally:
        if fd >= 0:
            os.close(fd)


def write_new(path: str, data: bytes, mode: int, what: str) -> None:
    """Create ``path`` with ``data`` and permissions ``mode`` (whatever the umask), durably; an
    existing file is never overwritten (ParameterError naming ``path``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise ParameterError("path", path, f"a path where no file exists (a {what} is never overwritten)") from None
    except OSError as exc:
        raise PufferIOError(path, f"creating the {what}", exc.strerror or exc) from None
    try:
        os.fchmod(fd, mode)
        if os.write(fd, data) != len(data):
            raise OSError(28, "short write (disk full?)")
        os.fsync(fd)
    except BaseException as exc:  # a full disk, or a signal: no partial file is left
        os.close(fd)
        os.unlink(path)
        if isinstance(exc, OSError):
            raise PufferIOError(path, f"writing the {what}", exc.strerror or type(exc).__name__) from None
        raise
    os.close(fd)


def check_private(mode: int, param: str, shown: str, what: str, *, path: str | None = None) -> None:
    """A file holding a secret (release key, signing key, unit secret) must be accessible to its
    owner only: ``mode`` is its ``st_mode``; the hint names ``path`` where it may be shown."""
    if mode & 0o077:
        fix = f"`chmod 600 {path}`" if path is not None else "`chmod 600` on it"
        raise ParameterError(param, shown, f"a {what} only its owner can access (mode is {oct(mode & 0o777)}; "
                             f"run {fix})")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"the number {text[:24]} is beyond the double range")
    return v


#: a decoder for what puffer writes (RFC 8259 JSON: no NaN, no Infinity, finite numbers)
STRICT_JSON = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def loads(text: str) -> Any:
    """``json.loads`` for the files puffer writes: anything else raises ``ValueError`` (a
    ``json.JSONDecodeError`` is one) -- also what canonical JSON never holds (``NaN``,
    ``Infinity``, a number beyond the double range) and what the parser cannot hold (an integer
    of more than 4300 digits, nesting beyond the recursion limit), never another exception.

    >>> loads('{"eps": NaN}')
    Traceback (most recent call last):
    ...
    ValueError: NaN is not a JSON number
    """
    try:
        return STRICT_JSON.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def shown_path(path: str) -> str:
    """``path`` as an error message may show it: not at all when it could be key material (other
    than plain ASCII path characters, no folder and no extension, a long hex run, base64 text)."""
    base = os.path.basename(path)
    # base64 text in the whole argument or in any component or stem of it (``./BASE64TEXT``,
    # ``BASE64TEXT.key``)
    b64 = any(_B64_TEXT.fullmatch(part.strip()) is not None
              and sum(bool(re.search(c, part)) for c in ("[0-9]", "[a-z]", "[A-Z]")) >= 2
              for part in [path, *re.split(r"[/.]", path)])
    if not _SAFE_PATH.fullmatch(path) or (os.sep not in path and "." not in base) or _HEX_RUN.search(path) or b64:
        return "<the value given (not shown: it may be key material)>"
    return path
