"""The release ledger: append-only, hash-chained, signed JSON lines with checkpoints.

The release ledger: append-only, hash-chained, signed JSON lines with checkpoints
(``puffer ledger verify|checkpoint``).

Format. One JSON object per line (keys sorted, compact). Entry ``i`` carries ``seq = i``,
``prev`` = SHA-256 of the bytes of line ``i - 1`` (64 zeros for the first line) and ``hash`` =
SHA-256 of its own canonical JSON without ``hash`` and ``sig``. :func:`verify` recomputes both
for every line and names the first entry that fails: an edited field breaks that entry's
``hash`` (or, if the forger recomputed it, the next entry's ``prev``), a deleted line or a swap
breaks ``seq``/``prev``.

Signatures. A chain alone is recomputable by anyone who can write the file. A ledger written
with a signing key (``--sign PATH``, ``signing_key=``; :mod:`puffer.publish.signing`) carries in
every entry ``signer`` (key id and Ed25519 public key, inside the hashed body) and ``sig``, the
signature of ``ENTRY_DOMAIN || hash``. A ledger is signed from its first entry or not at all:
once the first entry is signed, an unsigned append, or one by another key, is refused, and
:func:`verify` fails on any entry without a valid signature of that key. With the public key
from elsewhere (``verify(path, pub=...)``, ``--pub PATH.pub``) verification needs no secret
and proves who wrote every entry; without it, :func:`verify` checks the signatures against the
key the ledger names and says that authenticity was not checked (a forger may have re-signed
everything with a key of their own).

Checkpoints. What neither a chain nor signatures show is entries cut off the end. After every
append a checkpoint ``{"entries": n, "head": SHA-256 of line n - 1, ...}``, signed like the
entries (``CHECKPOINT_DOMAIN``), is written beside the ledger (``L.checkpoint``;
:func:`checkpoint` reads it, ``puffer ledger checkpoint L`` prints it). Keep copies elsewhere:
``verify(path, checkpoint=C)`` fails unless the ledger *extends* ``C`` (its first ``n`` lines
are those ``C`` was taken of), so a checkpoint stays valid after later genuine releases while a
cut or a rewrite of anything it covers is caught, as with the consistency proofs of
certificate-transparency logs (RFC 6962). The checkpoint beside the ledger is checked too, but
whoever can write the folder can replace it with an older one: only a copy kept elsewhere
anchors the tail.

Events. A publication writes two entries (see :mod:`puffer.publish.release`): ``pending`` (every
field of the release, the output's digest, made durable *before* the output appears at its
final path) and then ``completed``. A process killed in between leaves a pending entry
without completion; :func:`verify` reports it (with whether the output is there with that
digest) and the next release on the ledger resolves it with a ``resolved`` entry
(``published``, or ``unknown`` when the output is not there with its digest; a run that knows
it did not publish records ``aborted``). So no output is ever published without an entry.
:func:`append_ledger` adds a ``note`` only: every entry that counts goes through the release.

Files. The ledger, its checkpoint and its unit side files are created with mode 0600 (owner
only; a umask can only remove bits from it): an entry describes the release in detail, and a
fitted Theta's transition counts are never in it (:func:`puffer.publish.release.fit_record`).
Give auditors a copy, or loosen the mode yourself.

Writing. Appends take an exclusive ``fcntl`` lock on the ledger file, write each line with a
single ``write`` and ``fsync`` the file (and the folder when the file is created). On a write
error (disk full) the file is truncated back to its previous length; if even that fails, the
torn last line (an incomplete JSON object after the last newline) is reported by :func:`verify`
and removed by the next append, which records the removed bytes' length and SHA-256
(``repaired_tail``) -- but only when the torn line cannot be a cut entry: it must not hold a
complete entry (a removed newline is an attack, never an interrupted write), and every entry
the checkpoint beside the ledger covers must still be there (a signed ledger is not appended
to at all without its checkpoint file: deleting it would otherwise hide a cut).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
import secrets
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import LedgerError, ParameterError, ParameterTypeError, PufferIOError
from ._files import STRICT_JSON, fsync_dir, loads, read_regular, shown_path
from .digest import output_state
from .signing import CHECKPOINT_DOMAIN, ENTRY_DOMAIN, PublicKey, SigningKey, as_public_key, as_signing_key
from .unitsets import load_units

__all__ = ["Ledger", "LedgerError", "read_ledger", "append_ledger", "verify", "checkpoint", "LEDGER_VERSION",
           "GENESIS", "default_ledger_path", "ledger_path", "canonical", "checkpoint_path", "release_states"]

LEDGER_VERSION = 3
CHECKPOINT_VERSION = 1
GENESIS = "0" * 64
_UNHASHED = ("hash", "sig")  # what an entry's hash does not cover
_NO_CHECKPOINT = ("a signed ledger without its checkpoint file: it was deleted (or a run died right after the "
                  "ledger's first entry), so entries cut off the end could not be told. Check the ledger against a "
                  "checkpoint kept elsewhere (`puffer ledger verify L --pub P --checkpoint C`), then write a new one "
                  "(`puffer ledger checkpoint L --sign KEY`)")


def _no_checkpoint(path: str, signing_key: Any) -> str:
    """:data:`_NO_CHECKPOINT` with the commands spelt out for this ledger and signing key."""
    import shlex

    key = getattr(signing_key, "path", None) or "KEY"
    return (_NO_CHECKPOINT.replace("verify L ", f"verify {shlex.quote(path)} ")
            .replace("checkpoint L --sign KEY", f"checkpoint {shlex.quote(path)} --sign {shlex.quote(str(key))}")
            + ". Until then every release into it is refused")


def canonical(obj: Any) -> bytes:
    """The bytes an entry is hashed and written as (sorted keys, compact, ASCII, no NaN)."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False).encode("ascii")
    except (TypeError, ValueError, RecursionError) as exc:
        raise ParameterError("entry", repr(obj)[:80], f"a JSON-serialisable entry without NaN/inf ({exc})") from None


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def default_ledger_path(output: str | os.PathLike[str]) -> str:
    """``puffer-ledger.jsonl`` in the output's folder (the CLI's and the API's default)."""
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(output))), "puffer-ledger.jsonl")


def ledger_path(ledger: Any, default: str) -> str:
    """The ledger a release records into: ``ledger``, else ``PUFFER_LEDGER``, else the engine's
    ``default``. With ``PUFFER_LEDGER`` set, a release into any other ledger is refused: a
    ledger sees only its own releases, so an environment that publishes about one population
    of people should record them all in one (:mod:`puffer.publish.totals`). Every release checks it
    (:func:`puffer.publish.release.begin_release`); a relative ``PUFFER_LEDGER`` is refused."""
    env = os.environ.get("PUFFER_LEDGER") or None
    chosen = os.path.abspath(os.fspath(ledger)) if ledger is not None else None
    if chosen is not None and "\x00" in chosen:   # the OS calls would raise a bare ValueError
        raise ParameterError("ledger", chosen, "a path without NUL bytes")
    if env is not None:
        if not os.path.isabs(env):
            raise ParameterError("PUFFER_LEDGER", env, "an absolute path: a relative one names another ledger in "
                                 "every working folder, so the releases would not all be recorded in one")
        want = os.path.abspath(env)
        if chosen is not None and os.path.realpath(chosen) != os.path.realpath(want):
            raise ParameterError("ledger", chosen, f"the ledger PUFFER_LEDGER names ({want}): every release of this "
                                 "environment is recorded there, so that its totals see them all")
        return want
    return default if chosen is None else chosen


def checkpoint_path(ledger: str | os.PathLike[str]) -> str:
    """Where the checkpoint of a ledger is written: ``L.checkpoint`` beside it."""
    return os.path.abspath(os.fspath(ledger)) + ".checkpoint"


def _starting_worker() -> bool:
    """True while a spawned or forkserver worker process (Dask's nannies, multiprocessing's
    "spawn") re-runs the main script to start up: the flag multiprocessing itself checks to refuse
    starting processes at that point (``spawn._check_not_importing_main``). A script without an
    ``if __name__ == "__main__":`` guard would otherwise publish once more from every worker."""
    import sys

    mp = sys.modules.get("multiprocessing.process")   # not imported: no worker start-up under way
    return mp is not None and bool(getattr(mp.current_process(), "_inheriting", False))


def _split(data: bytes) -> tuple[list[bytes], bytes]:
    """(complete lines without their newline, trailing bytes after the last newline)."""
    if not data:
        return [], b""
    parts = data.split(b"\n")
    return parts[:-1], parts[-1]


def _tail_problem(tail: bytes) -> str | None:
    """None when ``tail`` (the bytes after the last newline) can be an interrupted append: the
    start of one entry, an incomplete JSON object. Else why it cannot: our appends write a
    whole line in one ``write``, so a complete entry without its newline means bytes were
    removed (two releases' lines merged into a "torn" tail would vanish with it)."""
    if not tail:
        return None
    if not tail.startswith(b"{"):
        return "bytes after the last line that do not start an entry: the file was edited"
    try:
        STRICT_JSON.raw_decode(tail.decode("utf-8", errors="replace"))
    except json.JSONDecodeError:
        return None
    except (ValueError, RecursionError):  # NaN, 1e400, 5000 digits, deep nesting: never written by puffer
        return "bytes after the last line that no entry holds: the file was edited"
    return ("a complete entry after the last newline: a newline was removed (an interrupted append leaves an "
            "incomplete line, never a complete entry); restore the newline after checking the bytes")


def _signer(e: dict[str, Any]) -> dict[str, Any] | None:
    s = e.get("signer")
    return s if isinstance(s, dict) else None


# ---------------------------------------------------------------------- checkpoints
def make_checkpoint(ledger_path: str, entries: int, head: str, signing_key: SigningKey | None) -> dict[str, Any]:
    """A checkpoint of the first ``entries`` lines (``head``: SHA-256 of the last of them),
    signed with ``signing_key`` if given."""
    cp: dict[str, Any] = {"puffer_checkpoint": CHECKPOINT_VERSION, "ledger": os.path.basename(ledger_path),
                          "entries": int(entries), "head": head, "time": _now()}
    if signing_key is not None:
        cp["signer"] = signing_key.public.describe()
        cp["sig"] = signing_key.sign(CHECKPOINT_DOMAIN, canonical(cp))
    return cp


def _as_checkpoint(cp: Any, what: str) -> dict[str, Any]:
    """A checkpoint dict from a dict, its JSON text, or a file holding it (validated)."""
    if isinstance(cp, (str, os.PathLike)) and not (isinstance(cp, str) and cp.lstrip().startswith("{")):
        p = os.fspath(cp)
        shown = shown_path(p)  # key material given as the path is never echoed
        try:
            cp = read_regular(p, 1 << 16).decode("utf-8")
        except FileNotFoundError:
            raise ParameterError("checkpoint", shown, "an existing checkpoint file (`puffer ledger checkpoint L > "
                                 "FILE`)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ParameterError("checkpoint", shown, f"a readable checkpoint file ({exc})") from None
    if isinstance(cp, str):
        try:
            cp = loads(cp)
        except ValueError as exc:
            raise ParameterError("checkpoint", what, f"a checkpoint in JSON ({exc})") from None
    if not isinstance(cp, dict):
        raise ParameterTypeError("checkpoint", what, "a checkpoint: a dict, its JSON text or a file")
    ok = (cp.get("puffer_checkpoint") == CHECKPOINT_VERSION and isinstance(cp.get("entries"), int)
          and not isinstance(cp.get("entries"), bool) and cp["entries"] >= 0 and isinstance(cp.get("head"), str)
          and len(cp["head"]) == 64)
    if not ok:
        raise ParameterError("checkpoint", what, f"a puffer checkpoint (puffer_checkpoint {CHECKPOINT_VERSION}, "
                             "entries, head)")
    return cp


def read_checkpoint(path: str) -> dict[str, Any] | None:
    """The checkpoint written beside a ledger (None if there is none)."""
    if not os.path.exists(path):
        return None
    return _as_checkpoint(path, path)


def _write_checkpoint(path: str, cp: dict[str, Any]) -> None:
    """Replace the checkpoint file atomically (temporary file, fsync, rename, fsync the folder)."""
    folder, base = os.path.dirname(path), os.path.basename(path)
    tmp = os.path.join(folder, f".{base}.tmp-{os.getpid()}-{secrets.token_hex(8)}")
    data = canonical(cp) + b"\n"
    try:
        for name in os.listdir(folder):  # of killed runs (every writer holds the ledger's lock)
            if name.startswith(f".{base}.tmp-"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))
        # a new file, never one planted at a guessable name (a link would have us write elsewhere)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write (disk full?)")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(folder)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise PufferIOError(path, "writing the ledger's checkpoint", exc.strerror or exc) from None


def _check_checkpoint(path: str, cp: dict[str, Any], lines: Sequence[bytes], signer: dict[str, Any] | None,
                      pub: PublicKey | None, what: str, *, local: bool = False) -> str:
    """Raise LedgerError unless the ledger (``lines``) extends checkpoint ``cp`` and its signature
    (if any) is valid, by the ledger's signer and by ``pub`` when given; ``local``: the file
    beside a signed ledger must be signed (puffer never writes it unsigned). Returns a note."""
    n, want = cp["entries"], cp["head"]
    note = ""
    if local and signer is not None and cp.get("sig") is None:
        raise LedgerError(path, max(n - 1, 0), f"{what}: unsigned, but the ledger is signed (puffer writes it "
                          "signed): the checkpoint file was replaced")
    if cp.get("sig") is not None or cp.get("signer") is not None:
        s = cp.get("signer")
        try:
            key = PublicKey.from_hex(s.get("public_key") if isinstance(s, dict) else None, what="checkpoint signer")
        except ParameterError:
            raise LedgerError(path, max(n - 1, 0), f"{what}: its signer is not an Ed25519 public key") from None
        body = {k: v for k, v in cp.items() if k != "sig"}
        if not key.verify(CHECKPOINT_DOMAIN, canonical(body), cp.get("sig")):
            raise LedgerError(path, max(n - 1, 0), f"{what}: its signature does not verify (the checkpoint was "
                              "edited)")
        if pub is not None and key != pub:
            raise LedgerError(path, max(n - 1, 0), f"{what}: signed by key {key.key_id}, not by the key given "
                              f"({pub.key_id})")
        if signer is not None and signer.get("public_key") != key.hex:
            raise LedgerError(path, max(n - 1, 0), f"{what}: signed by key {key.key_id}, not by the ledger's key "
                              f"({signer.get('key_id')})")
        note = f"signed by key {key.key_id}"
    else:
        note = "unsigned (trusted as given)"
    if n > len(lines):
        raise LedgerError(path, len(lines), f"missing: {what} records {n} entries and the ledger has "
                          f"{len(lines)}: entries were cut off the end")
    got = _sha(lines[n - 1]) if n else GENESIS
    if got != want:
        raise LedgerError(path, max(n - 1, 0), f"differs from {what} (its head is {want}, this entry hashes to "
                          f"{got}): the ledger was rewritten up to here")
    return note


class Ledger:
    """One ledger file. ``entries()`` reads, ``append(entry)`` chains, signs (with the
    ``signing_key`` given here) and writes one entry durably under the lock, then its
    checkpoint; ``locked()`` holds the lock across several steps."""

    def __init__(self, path: str | os.PathLike[str], *, signing_key: Any = None):
        p = os.fspath(path)
        if not isinstance(p, str) or not p:
            raise ParameterError("ledger", path, "a file path")
        self.path = os.path.abspath(p)
        self.signing_key = as_signing_key(signing_key)
        self._fd: int | None = None
        self._depth = 0
        self._memo: Any = None  # (bytes, LedgerState, SHA-256, stamp) this object verified last (puffer.publish.index)
        self._tail = b""        # the bytes after the last complete line, at the last state()

    def __repr__(self) -> str:
        signed = "" if self.signing_key is None else f", signing_key={self.signing_key!r}"
        return f"Ledger({self.path!r}{signed})"

    @property
    def checkpoint_path(self) -> str:
        return checkpoint_path(self.path)

    # ------------------------------------------------------------------ checks
    def check_writable(self) -> None:
        """Refuse (PufferIOError) a ledger that cannot be appended to: a missing or read-only
        folder, a read-only file, a folder at the path. Called before anything is published.
        Also refused (ParameterError): a process that is re-running the main script while it
        starts (a spawned Dask or multiprocessing worker; see :func:`_starting_worker`)."""
        if _starting_worker():
            raise ParameterError("ledger", self.path, "a release from the main process: this process is a worker "
                                 "(Dask, multiprocessing) re-running the main script while it starts; put the "
                                 "script's work under `if __name__ == \"__main__\":`")
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

    def check_signer(self, entries: list[dict[str, Any]] | None = None, *, need_checkpoint: bool = True) -> None:
        """Refuse (ParameterError) appending with this object's signing key: an unsigned append to
        a signed ledger, one by another key, or a signed append to a ledger started unsigned; and
        (LedgerError) appending to a signed ledger whose checkpoint file is gone."""
        if entries is None:  # the first entry and the count, verified (puffer.publish.index)
            st, _ = self.state()
            es, count = ([st.first] if st.first is not None else []), st.n
        else:
            es, count = entries, len(entries)
        if not es:
            return
        s0 = _signer(es[0])
        sk = self.signing_key
        if s0 is None and sk is not None:
            raise ParameterError("signing_key", sk.key_id, "no signing key for this ledger: its first entry is "
                                 "unsigned, and a ledger is signed from its first entry or not at all (start a new "
                                 "ledger for signed releases)")
        if s0 is not None and sk is None:
            raise ParameterError("signing_key", None, f"the ledger's signing key (key id {s0.get('key_id')}): its "
                                 "entries are signed, so every append must be (--sign PATH / signing_key=)")
        if s0 is not None and sk is not None and s0.get("public_key") != sk.public.hex:
            raise ParameterError("signing_key", sk.key_id, f"the ledger's signing key (key id {s0.get('key_id')}): "
                                 "its entries are signed by that key only")
        if need_checkpoint and s0 is not None and not os.path.exists(self.checkpoint_path):
            raise LedgerError(self.path, count - 1, _no_checkpoint(self.path, sk))

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
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            raise PufferIOError(self.path, "opening the ledger", exc.strerror or exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if created:
                fsync_dir(os.path.dirname(self.path))
            self._fd, self._depth = fd, 1
            yield self
        finally:
            self._fd, self._depth = None, 0
            os.close(fd)  # releases the lock

    # ------------------------------------------------------------------ read
    def _data(self) -> bytes:
        try:
            return read_regular(self.path)
        except FileNotFoundError:
            return b""
        except IsADirectoryError:
            raise ParameterError("ledger", self.path, "a file, not a folder") from None
        except OSError as exc:
            raise PufferIOError(self.path, "reading the ledger", exc.strerror or exc) from None

    def _parse(self, lines: Sequence[bytes]) -> list[dict[str, Any]]:
        out = []
        for k, line in enumerate(lines):
            try:
                e = loads(line.decode("utf-8"))
            except ValueError as exc:  # also NaN, Infinity, 1e400, 5000 digits, deep nesting
                raise LedgerError(self.path, k, f"not a JSON object ({exc})") from None
            if not isinstance(e, dict):
                raise LedgerError(self.path, k, f"a JSON {type(e).__name__}, not an object")
            out.append(e)
        return out

    def entries(self, *, check: bool = True) -> list[dict[str, Any]]:
        """Every complete entry (a torn trailing line is left out); ``check`` verifies the chain,
        the signatures against the key the ledger names (those a signed checkpoint beside the
        ledger vouches for are not checked again: :meth:`verify` checks every one) and that the
        ledger extends that checkpoint."""
        lines, tail = _split(self._data())
        if check:
            why = _tail_problem(tail)
            if why is not None:
                raise LedgerError(self.path, len(lines), why)
            self._verify_lines(lines, crypto_from=self._trusted(lines))
        return self._parse(lines)

    def state(self, data: bytes | None = None) -> tuple[Any, bytes]:
        """(:class:`~puffer.publish.index.LedgerState` of the ledger, the bytes of its complete
        lines): one read of the file, the index used where it matches those bytes, every entry
        it does not cover verified, and the checkpoint beside the ledger checked (what
        :meth:`entries` checks, without re-reading what the index vouches for). ``data``: the
        file's bytes, read by the caller. Without it, a file whose size, inode and modification
        and change times are those this object recorded right before verifying it (or right
        after its own append) is not read again: another release's append changes the size, and
        an edit made since is no different from one made right after this object's next append
        (the chain breaks there either way, and ``puffer ledger verify`` names the entry)."""
        from .index import full_lines, load_state

        memo = self._memo
        if data is None:
            stamp = self._stamp()
            if memo is not None and stamp is not None and memo[3] == stamp:
                # the file is as this object verified it: its size, inode, modification and
                # change times (the kernel sets the change time on every write; no user can set
                # it back) are those recorded right after that read or this object's append
                self._trusted(full_lines(memo[1], memo[0]))
                self._tail = b""
                return memo[1], memo[0]
            data = self._data()
        else:
            stamp = None
        end = data.rfind(b"\n") + 1
        why = _tail_problem(data[end:])
        if why is not None:
            raise LedgerError(self.path, data.count(b"\n"), why)
        complete, self._tail = data[:end], data[end:]
        st, h = load_state(self, complete, None if memo is None else memo[:2])
        self._trusted(full_lines(st, complete))  # the ledger extends the checkpoint beside it
        if h is None:  # from this object's own state: its SHA-256, extended (the index records it)
            h = memo[2].copy()
            h.update(memoryview(complete)[len(memo[0]):])
        # (a stamp taken before the read: a write during the read changes it, and the next call reads again)
        self._memo = (complete, st, h, stamp if end == len(data) else None)
        return st, complete

    def _stamp(self, fd: int | None = None) -> tuple[int, ...] | None:
        """(size, inode, device, modification and change times in ns) of the ledger file."""
        try:
            s = os.fstat(fd) if fd is not None else os.stat(self.path)
        except OSError:
            return None
        return (s.st_size, s.st_ino, s.st_dev, s.st_mtime_ns, s.st_ctime_ns)

    def _verify_tail(self, lines: list[bytes], st: Any) -> None:
        """Verify ``lines``, the entries after the :attr:`n` that ``st`` covers (chain from its
        head, canonical form, hashes, every signature)."""
        self._verify_lines(lines, offset=st.n, prev=st.head, first=st.first)

    def _local_checkpoint(self, lines: Sequence[bytes]) -> dict[str, Any] | None:
        """The checkpoint file beside the ledger (None if there is none); one that is not a puffer
        checkpoint is a LedgerError (exit 7, as any other sign of tampering), not bad input."""
        try:
            return read_checkpoint(self.checkpoint_path)
        except (ParameterError, ParameterTypeError) as exc:
            raise LedgerError(self.path, max(len(lines) - 1, 0), f"the checkpoint file beside the ledger is not "
                              f"a puffer checkpoint (expected {exc.expected}): it was edited or replaced") from None

    def _trusted(self, lines: Sequence[bytes]) -> int:
        """How many leading lines the signed checkpoint beside the ledger vouches for (after
        checking that the ledger extends it; LedgerError if not)."""
        local = self._local_checkpoint(lines)
        if local is None:
            return 0
        s0 = _signer(self._parse(lines[:1])[0]) if lines else None
        _check_checkpoint(self.path, local, lines, s0, None, "the checkpoint file beside the ledger", local=True)
        return int(local["entries"]) if local.get("sig") else 0

    # ------------------------------------------------------------------ verify
    def _verify_lines(self, lines: list[bytes], *, pub: PublicKey | None = None, crypto_from: int = 0,
                      offset: int = 0, prev: str = GENESIS, first: dict[str, Any] | None = None
                      ) -> tuple[str, dict[str, Any] | None]:
        """(head, signer of the first entry or None); LedgerError naming the first bad entry.
        Signatures of entries before ``crypto_from`` (covered by a verified signed checkpoint)
        are not checked again. ``offset``, ``prev``, ``first``: ``lines`` are the entries from
        ``offset`` on of a ledger whose entry ``offset - 1`` hashes to ``prev`` and whose first
        entry is ``first`` (already verified: :mod:`puffer.publish.index`)."""
        entries = self._parse(lines)
        if offset:
            entries_first = first
        else:
            entries_first = entries[0] if entries else None
        s0 = _signer(entries_first) if entries_first is not None else None
        key0: PublicKey | None = None
        if s0 is not None:
            try:
                key0 = PublicKey.from_hex(s0.get("public_key"), what="signer")
            except ParameterError:
                raise LedgerError(self.path, 0, "its signer is not an Ed25519 public key") from None
            if s0.get("key_id") != key0.key_id:
                raise LedgerError(self.path, 0, f"its signer's key id {s0.get('key_id')!r} is not the id of its "
                                  f"public key ({key0.key_id})")
        if pub is not None:
            if key0 is None:
                raise LedgerError(self.path, 0, f"not signed: the ledger is unsigned, so nothing in it can be "
                                  f"checked against key {pub.key_id}")
            if key0 != pub:
                raise LedgerError(self.path, 0, f"signed by key {key0.key_id}, not by the key given ({pub.key_id})")
        for k, (line, e) in enumerate(zip(lines, entries), offset):
            if e.get("seq") != k:
                raise LedgerError(self.path, k, f"seq is {e.get('seq')!r}, expected {k}: an entry was deleted, "
                                  "inserted or moved")
            if e.get("prev") != prev:
                raise LedgerError(self.path, k, "prev does not match the SHA-256 of the entry before it: that "
                                  "entry was edited, or entries were deleted or reordered")
            body = {kk: v for kk, v in e.items() if kk not in _UNHASHED}
            try:
                h = _sha(canonical(body))
            except ParameterError:  # nothing puffer writes (e.g. nested deeper than the encoder goes)
                raise LedgerError(self.path, k, "not an entry puffer writes: the entry was edited") from None
            if e.get("hash") != h:
                raise LedgerError(self.path, k, "its hash does not match its content: the entry was edited")
            if line != canonical(e):
                raise LedgerError(self.path, k, "not in canonical form: the entry was rewritten")
            s = _signer(e)
            if key0 is None:
                if s is not None or "sig" in e:
                    raise LedgerError(self.path, k, "signed, but the ledger's first entry is not: a ledger is signed "
                                      "from its first entry or not at all")
            else:
                if s is None or "sig" not in e:
                    raise LedgerError(self.path, k, f"not signed: the ledger's entries are signed by key "
                                      f"{key0.key_id}, so every entry must be (an unsigned entry was added)")
                if s != s0:
                    raise LedgerError(self.path, k, f"signed by key {s.get('key_id')}, not by the ledger's key "
                                      f"{key0.key_id}")
                if k >= crypto_from and not key0.verify(ENTRY_DOMAIN, bytes.fromhex(h), e.get("sig")):
                    raise LedgerError(self.path, k, f"its signature does not verify under key {key0.key_id}: the "
                                      "entry was edited or re-hashed")
            prev = _sha(line)
        return prev, s0

    def verify(self, *, head: str | None = None, checkpoint: Any = None, pub: Any = None,
               check_outputs: bool = True) -> dict[str, Any]:
        """Check the whole ledger; raise :class:`LedgerError` naming the first bad entry.

        ``pub``: the signer's public key (a ``.pub`` file, :class:`~puffer.publish.signing.PublicKey`):
        every entry must carry a valid signature by it. ``checkpoint``: a checkpoint kept
        elsewhere (a file, its JSON text or dict): the ledger must extend it. ``head``: a head
        hash kept elsewhere: the ledger must end there. The checkpoint beside the ledger is
        checked too. Returns ``{"ok", "ledger", "entries", "head", "releases", "pending",
        "torn_tail", "signed", "signer", "authenticated", "authenticity", "anchors",
        "anchored", "unanchored"}``: ``pending`` lists releases with a pending entry and no
        completion, each with ``output_state`` ("published": the output is there with the
        recorded digest; "absent"; "different"); ``anchored`` is the number of entries a
        checkpoint or head given here covers."""
        return self.verified(head=head, checkpoint=checkpoint, pub=pub, check_outputs=check_outputs)[0]

    def verified(self, *, head: str | None = None, checkpoint: Any = None, pub: Any = None,
                 check_outputs: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(:meth:`verify`'s result, the entries it verified): the file is read once into memory,
        and the entries are parsed from those very bytes, so a report built from them shows
        only what was checked (a file swapped after the check is never reported on)."""
        pk = as_public_key(pub)
        data = self._data()
        return self._verify_data(data, head=head, checkpoint=checkpoint, pk=pk, check_outputs=check_outputs)

    def _verify_data(self, data: bytes, *, head: str | None, checkpoint: Any, pk: PublicKey | None,
                     check_outputs: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """:meth:`verified` of the ledger's bytes ``data``."""
        lines, tail = _split(data)
        h, s0 = self._verify_lines(lines, pub=pk)
        why = _tail_problem(tail)  # before the checkpoints: the more precise diagnosis
        if why is not None:
            raise LedgerError(self.path, len(lines), why)
        anchors: list[dict[str, Any]] = []
        anchored = 0
        local = self._local_checkpoint(lines)
        if local is not None:
            note = _check_checkpoint(self.path, local, lines, s0, pk, "the checkpoint file beside the ledger",
                                     local=True)
            anchors.append({"checkpoint": self.checkpoint_path, "entries": local["entries"], "note": note,
                            "kept_elsewhere": False})
        if checkpoint is not None:
            cp = _as_checkpoint(checkpoint, "the checkpoint given")
            note = _check_checkpoint(self.path, cp, lines, s0, pk, "the checkpoint given")
            anchors.append({"checkpoint": "given", "entries": cp["entries"], "note": note, "kept_elsewhere": True})
            anchored = max(anchored, cp["entries"])
        if head is not None:
            if head != h:
                raise LedgerError(self.path, len(lines) - 1 if lines else 0,
                                  f"the last entry's hash is {h}, not the recorded head {head}: entries were "
                                  "cut off the end or the chain was rewritten")
            anchored = len(lines)
        entries = self._parse(lines)
        for e in entries:  # unit sets kept beside the ledger: there, with the digest their entry signs
            if e.get("event") == "pending":
                load_units(e, self.path)
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
        key_id = None if s0 is None else s0.get("key_id")
        if pk is not None:
            auth = f"authentic: every entry is signed by key {pk.key_id}, the key given"
        elif s0 is not None:
            auth = (f"authenticity NOT checked: the entries carry valid signatures of key {key_id}, the key the "
                    "ledger itself names; whoever can write the file could have re-signed it with a key of their "
                    "own. Check with the signer's public key (--pub PATH.pub)")
        else:
            auth = ("authenticity NOT checked: the ledger is not signed, so whoever can write the file could have "
                    "rewritten it consistently. Sign releases (--sign PATH, `puffer keygen --signing PATH`)")
        return {"ok": True, "ledger": self.path, "entries": len(lines), "head": h,
                "releases": sum(1 for s in state.values() if s["status"] in ("completed", "published")),
                "pending": pending, "torn_tail": torn, "signed": s0 is not None, "signer": key_id,
                "authenticated": pk is not None, "authenticity": auth, "anchors": anchors, "anchored": anchored,
                "unanchored": len(lines) - anchored}, entries

    # ------------------------------------------------------------------ append
    def append(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Chain ``entry`` (adds seq, prev, hash; signer and sig with a signing key), write it
        durably, then the checkpoint; returns the written entry."""
        if not isinstance(entry, dict):
            raise ParameterError("entry", entry, "a dict")
        sk = self.signing_key
        from .index import save_state

        with self.locked():
            fd = self._fd
            assert fd is not None
            # never append to a broken chain, a forged signature, a cut ledger or a cut entry:
            # every entry verified, or covered by the ledger's index (puffer.publish.index)
            st, complete = self.state()
            tail = self._tail  # (a torn last line: removed by this append, recorded below)
            local = self._local_checkpoint([])
            s0 = _signer(st.first) if st.first is not None else None
            self.check_signer([st.first] if st.first is not None else [])
            if s0 is not None and local is None:
                raise LedgerError(self.path, st.n - 1, _no_checkpoint(self.path, self.signing_key))
            head = st.head
            e = {k: v for k, v in entry.items() if k not in ("seq", "prev", "hash", "sig", "signer")}
            if tail:
                e["repaired_tail"] = {"bytes": len(tail), "sha256": _sha(tail)}
            e.update(seq=st.n, prev=head)
            if sk is not None:
                e["signer"] = sk.public.describe()
            e["hash"] = h = _sha(canonical(e))
            if sk is not None:
                e["sig"] = sk.sign(ENTRY_DOMAIN, bytes.fromhex(h))
            line = canonical(e) + b"\n"
            good = len(complete)
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
            _write_checkpoint(self.checkpoint_path, make_checkpoint(self.path, st.n + 1, _sha(line[:-1]), sk))
            prefix = self._memo[2].copy()  # SHA-256 of `complete` (state() above)
            prefix.update(line)
            st.apply(e, line[:-1], len(complete), self.path)
            self._memo = (complete + line, st, prefix, self._stamp(fd))
            if e.get("event") != "completed":  # (a completion is one line for the next release to verify)
                save_state(self, st, prefix.hexdigest())
            return e

    def checkpoint(self) -> dict[str, Any]:
        """The latest checkpoint (the file beside the ledger), checked against the ledger (read
        only). A ledger without one (written before checkpoints existed) gets a new one, signed
        with this object's signing key (required for a signed ledger)."""
        from .index import full_lines

        st, complete = self.state()  # every entry verified, or covered by the index
        lines = full_lines(st, complete)
        s0 = _signer(st.first) if st.first is not None else None
        local = self._local_checkpoint(lines)
        if local is not None:
            _check_checkpoint(self.path, local, lines, s0, None, "the checkpoint file beside the ledger", local=True)
            return local
        with self.locked():
            all_lines, _ = _split(self._data())
            head, s0 = self._verify_lines(all_lines)
            self.check_signer(self._parse(all_lines[:1]), need_checkpoint=False)
            cp = make_checkpoint(self.path, len(all_lines), head, self.signing_key)
            _write_checkpoint(self.checkpoint_path, cp)
            return cp


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


def verify(path: str | os.PathLike[str], *, head: str | None = None, checkpoint: Any = None, pub: Any = None
           ) -> dict[str, Any]:
    """:meth:`Ledger.verify` of ``path`` (raises :class:`LedgerError` naming the first bad entry).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "ledger.jsonl")
    >>> _ = append_ledger(p, {"text": "a"}); _ = append_ledger(p, {"text": "b"})
    >>> verify(p)["entries"]
    2
    >>> text = open(p).read(); _ = open(p, "w").write(text.replace('"a"', '"c"'))
    >>> verify(p)
    Traceback (most recent call last):
    ...
    puffer.errors.LedgerError: ledger ...: entry 0 (line 1): its hash does not match its content: the entry was edited
    """
    return Ledger(path).verify(head=head, checkpoint=checkpoint, pub=pub)


def checkpoint(path: str | os.PathLike[str], *, signing_key: Any = None) -> dict[str, Any]:
    """The latest checkpoint of the ledger at ``path`` (:meth:`Ledger.checkpoint`): keep a copy
    somewhere the ledger's writers cannot reach, and verify against it later."""
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise ParameterError("ledger", p, "an existing ledger file")
    return Ledger(p, signing_key=signing_key).checkpoint()


def read_ledger(path: str | os.PathLike[str], *, check: bool = True) -> list[dict[str, Any]]:
    """The entries of a ledger file (an absent file has none); ``check`` verifies the chain first."""
    p = os.fspath(path)
    if not os.path.exists(p):
        return []
    return Ledger(p).entries(check=check)


def append_ledger(path: str | os.PathLike[str], note: dict[str, Any], *, signing_key: Any = None
                  ) -> dict[str, Any]:
    """Append a note (any JSON object, recorded as ``{"event": "note", "note": ...}``) to the
    ledger at ``path``: chained, locked, fsync'd, signed with ``signing_key`` (required for a
    signed ledger). A note never changes what the ledger says about releases: entries that
    count are written by a release (:func:`puffer.publish.begin_release`) only."""
    if not isinstance(note, dict):
        raise ParameterTypeError("note", note, "a dict (a JSON object)")
    canonical(note)  # JSON-able, or a clear error
    return Ledger(path, signing_key=signing_key).append({"puffer_ledger": LEDGER_VERSION, "event": "note",
                                                         "note": note, "time": _now()})
