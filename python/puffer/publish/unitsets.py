"""Which units a release touched, recorded so that it reveals nothing about them.

Totals belong to the units themselves, not to a column name or a file
(:mod:`puffer.publish.totals`), so each ledger entry records the set of units its release
touched (the entry's ``units``):

* ``{"kind": "ids", ...}`` -- the unit ids of a release with a unit column (``unit=``), each as a
  *keyed hash*: the first 64 bits of keyed BLAKE2b (RFC 7693; keyed BLAKE2 is a pseudorandom
  function) of the id's canonical text (:func:`puffer.publish.registry.canonical_id`: integers
  in plain decimal, strings as UTF-8, a string of plain decimal digits as the integer it spells,
  so ``17`` and ``"17"`` are one unit whichever engine or file format typed the column; any
  other spelling -- ``"0017"``, ``"+17"``, ``" 17"``, ``"17.0"``, non-NFC or invisible
  characters -- is refused, naming the id) -- under the ledger's **unit secret**. Without the secret nothing about an id follows from its hash (not even whether a
  guessed household is in the set); with equal ids the hashes are equal whatever the column is
  called. Sorted, little-endian ``uint64``; up to
  :data:`INLINE_MAX` in the entry (base64), beyond in a side file ``L.units/RELEASE_ID.u64``
  whose SHA-256 the entry records (and signs); it is looked up beside the ledger as it is named
  now, so a ledger renamed with its side files (``M``, ``M.checkpoint``, ``M.units/``) verifies.
* ``{"kind": "all"}`` -- a release whose rows name no unit (plain noise on rows,
  ``per_unit=True`` without ``unit=``): nothing says whose they are, so it is taken to touch
  every unit (the safe side).

Errors fall on the safe side only: two units are taken to be the same when their 64-bit hashes
are equal, so a collision (probability about ``n_a n_b / 2^64`` between sets of ``n_a`` and
``n_b`` units: 5e-8 for two sets of a million) can only report an overlap that is not there,
never miss one; sets under different
unit secrets or hash schemes (:data:`UNIT_HASH`) cannot be compared and are taken to overlap.

The unit secret of a signed ledger is derived from its signing key (HMAC-SHA256 keyed by the
private key, :meth:`puffer.publish.signing.SigningKey.derive`): only the signer can compute it
and nothing needs to be stored. An unsigned ledger keeps a random 256-bit secret in
``L.unit-secret`` (mode 0600, created with the ledger). Keep either as secret as a release key:
with it, anyone can test whether a given id is in a release.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets as _secrets
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import LedgerError, ParameterError, PufferIOError
from ._files import check_private, fsync_dir, loads, read_regular

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .signing import SigningKey

__all__ = ["UnitHasher", "unit_hasher", "describe_units", "load_units", "units_folder", "secret_file", "ALL", "INLINE_MAX",
           "UNIT_HASH"]

INLINE_MAX = 4096      # unit hashes kept in the entry itself (base64: ~11 bytes each)
ALL: dict[str, Any] = {"kind": "all"}
#: the hash scheme an entry records: sets are compared only under one scheme and one secret
UNIT_HASH = ("blake2b-64 keyed by the ledger's unit secret, of the unit id's text (integers in decimal, UTF-8; a "
             "string of decimal digits as its integer)")
_FORMAT = "puffer-unit-secret-v1"


class UnitHasher:
    """Keyed 64-bit hashes of unit ids under one ledger's unit secret (see the module docstring).
    Picklable (Spark/Dask workers hash their partitions; they see the ids anyway); never printed."""

    def __init__(self, secret: bytes, secret_id: str) -> None:
        self._secret = bytes(secret)
        self.secret_id = secret_id

    def __repr__(self) -> str:
        return f"UnitHasher(secret_id={self.secret_id!r})"

    def hashes(self, ids: Any) -> NDArray[np.uint64]:
        """The keyed hashes of ``ids`` (a sequence or array of integer or string ids), unsorted.
        Every id must be in its canonical form (:func:`puffer.publish.registry.canonical_id`):
        anything else is refused naming the id; a string of plain decimal digits is its integer."""
        from .registry import canonical_id

        arr = np.asarray(ids)
        if arr.dtype.kind == "f" or arr.dtype.kind == "b":
            raise ParameterError("unit", f"ids of dtype {arr.dtype}", "integer or string unit ids")
        base = hashlib.blake2b(key=self._secret, digest_size=8, person=b"puffer-unit-v1")
        out = []
        flat = arr.ravel()
        if flat.dtype.kind in "iu":
            if flat.size and int(flat.min()) < 0:
                canonical_id(int(flat.min()))  # refused, naming the id
            texts: Any = (str(v).encode("ascii") for v in flat.tolist())
        else:
            texts = (str(canonical_id(v)).encode("utf-8") if v is not None else None for v in flat.tolist())
        for t in texts:
            if t is None:
                raise ParameterError("unit", None, "no null unit ids")
            h = base.copy()
            h.update(t)
            out.append(h.digest())
        return np.frombuffer(b"".join(out), dtype="<u8").astype(np.uint64)

    def unit_set(self, ids: Any) -> NDArray[np.uint64]:
        """The sorted, distinct keyed hashes of ``ids``."""
        return np.unique(self.hashes(ids))


def secret_file(ledger_path: str) -> str:
    """Where an unsigned ledger's unit secret is kept: ``L.unit-secret`` beside it."""
    return ledger_path + ".unit-secret"


def unit_hasher(ledger_path: str, signing_key: SigningKey | None) -> UnitHasher:
    """The ledger's :class:`UnitHasher`: from the signing key of a signed ledger, else from the
    secret file beside the ledger (created, mode 0600, if it does not exist)."""
    if signing_key is not None:
        return UnitHasher(signing_key.derive(b"unit-ids"), f"signer:{signing_key.key_id}")
    path = secret_file(ledger_path)
    if not os.path.exists(path):
        doc = json.dumps({"format": _FORMAT, "id": _secrets.token_hex(16), "secret": os.urandom(32).hex()}) + "\n"
        tmp = f"{path}.tmp-{os.getpid()}-{_secrets.token_hex(8)}"
        try:  # a new file, never one planted at a guessable name (a link would have us write elsewhere)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, doc.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(FileExistsError):  # another release created it first: use that one
                os.link(tmp, path)
        except OSError as exc:
            raise PufferIOError(path, "creating the ledger's unit secret", exc.strerror or exc) from None
        finally:
            with contextlib.suppress(OSError):
                os.remove(tmp)
    try:
        st = os.stat(path)
        doc = loads(read_regular(path, 4096).decode("utf-8"))
        ok = isinstance(doc, dict) and doc.get("format") == _FORMAT
        secret, sid = bytes.fromhex(doc["secret"]), str(doc["id"])
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok or len(secret) != 32:
        raise ParameterError("ledger", path, "a unit secret file written by puffer (JSON with format, id, secret)")
    check_private(st.st_mode, "ledger", path, "unit secret file", path=path)
    return UnitHasher(secret, sid)


def units_folder(ledger_path: str) -> str:
    """Where the unit sets too large for an entry are kept: ``L.units/`` beside the ledger."""
    return ledger_path + ".units"


def describe_units(hashes: NDArray[np.uint64] | None, hasher: UnitHasher | None, ledger_path: str,
                   release_id: str) -> dict[str, Any]:
    """The entry's ``units`` field for the sorted distinct ``hashes`` (None: every unit, ALL);
    a large set goes to a side file, written durably before the entry that names it."""
    if hashes is None:
        return dict(ALL)
    assert hasher is not None
    data = np.ascontiguousarray(hashes, dtype="<u8").tobytes()
    out: dict[str, Any] = {"kind": "ids", "count": int(hashes.size), "secret": hasher.secret_id,
                           "hash": UNIT_HASH, "sha256": hashlib.sha256(data).hexdigest()}
    if hashes.size <= INLINE_MAX:
        out["ids"] = base64.b64encode(data).decode("ascii")
        return out
    folder = units_folder(ledger_path)
    name = f"{release_id}.u64"
    path = os.path.join(folder, name)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            if os.write(fd, data) != len(data):
                raise OSError(28, "short write (disk full?)")
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(folder)
    except OSError as exc:
        raise PufferIOError(path, "writing the release's unit set", exc.strerror or exc) from None
    out["file"] = os.path.join(os.path.basename(folder), name)
    return out


def load_units(entry: dict[str, Any], ledger_path: str) -> NDArray[np.uint64] | None:
    """The sorted unit hashes an entry records (None: every unit). Entries written before unit
    sets existed touch every unit (the safe side). A missing or altered side file is a
    :class:`LedgerError` naming the entry."""
    u = entry.get("units")
    if not isinstance(u, dict) or u.get("kind") != "ids":
        return None
    seq = int(entry.get("seq") or 0)
    try:
        if "ids" in u:
            data = base64.b64decode(u["ids"], validate=True)
        else:
            # found relative to the ledger as it is named now (L.units/RELEASE_ID.u64): a ledger
            # renamed with its side files still verifies; the entry's digest vouches for the bytes
            name = os.path.basename(str(u["file"]))
            if not name or name in (".", ".."):
                raise ValueError(f"not a unit-set file name: {u['file']!r}")
            data = read_regular(os.path.join(units_folder(ledger_path), name))
    except FileNotFoundError:
        raise LedgerError(ledger_path, seq, f"its unit set {os.path.basename(str(u.get('file')))} is missing beside the "
                          f"ledger (in {units_folder(ledger_path)})") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LedgerError(ledger_path, seq, f"its unit set cannot be read ({exc})") from None
    if hashlib.sha256(data).hexdigest() != u.get("sha256") or len(data) != 8 * int(u.get("count", -1)):
        raise LedgerError(ledger_path, seq, "its unit set does not match the digest the entry records: it was "
                          "altered")
    return np.frombuffer(data, dtype="<u8").astype(np.uint64)
