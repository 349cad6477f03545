"""The ledger's index: what a release reads of its ledger, kept up to date entry by entry.

A release used to re-read, re-parse and re-verify every entry of its ledger several times and
to recompute every population of units from scratch, so its cost grew with the ledger (100
releases: 48 s, 300: 419 s). :class:`LedgerState` holds what a release needs -- the first
entry (the signer), the status of every release and where its pending entry is in the file,
the nonces used, the registry of units per unit secret
(:mod:`puffer.publish.registry`), and the populations of units of the counted releases
(:mod:`puffer.publish.totals`: each unit's set of releases, kept as a table of distinct sets)
-- and is updated with each new entry.

It is kept beside the ledger in ``L.index`` (mode 0600), and it is never trusted more than the
chain itself:

* the index records the number of entries it covers, their byte length, the head hash and the
  SHA-256 of those bytes; a release reads the whole ledger once and uses the index only when
  the file's first bytes hash to that digest (an edit anywhere in them, a cut, a rewrite: the
  index is set aside and everything is verified from the first entry, as before);
* the index carries an HMAC-SHA256 under a secret derived from the signing key of a signed
  ledger (:meth:`puffer.publish.signing.SigningKey.derive`), or from the unit secret of an
  unsigned one (``L.unit-secret``, 0600; an unsigned ledger without one has no index), so
  nobody without that secret can write an index that is used;
* entries after those the index covers are verified as every entry was (chain, canonical
  form, hash, signature), and the checkpoint beside the ledger is checked against the file;
* anything the index cannot update exactly (unit sets under several unit secrets, a re-run of
  a release the ledger does not hold) sends the release back to the full computation over
  every entry; an aborted release leaves the populations, and a re-run that makes it count
  enters them again, as :func:`puffer.publish.totals.counted_releases` has it.

So a release's work on its ledger is one read and one SHA-256 of the file plus work on the new
entries and on the populations its own units belong to (bench/RESULTS.md: the overhead at 10,
10^3 and 10^4 entries). ``puffer ledger verify`` and ``show`` never use the index.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._files import loads, read_regular

__all__ = ["LedgerState", "index_path", "load_state", "save_state", "INDEX_FORMAT"]

INDEX_FORMAT = "puffer-ledger-index-v3"   # v3: a counted release's private fit (issue 40)
_UNSIGNED_KEY = b"puffer/v1/ledger-index/unsigned"


def index_path(ledger_path: str) -> str:
    """Where a ledger's index is kept: ``L.index`` beside it."""
    return ledger_path + ".index"


def _unit_label(e: dict[str, Any]) -> str:
    """The unit column a release named, or "(row)" (as :func:`puffer.publish.totals.unit_label`)."""
    u = e.get("unit")
    if isinstance(u, dict) and u.get("column"):
        return str(u["column"])
    return "(row)"


def _b64(a: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def _unb64(s: str, dtype: str) -> np.ndarray:
    out: np.ndarray = np.frombuffer(base64.b64decode(s), dtype=dtype).copy()
    return out


class Lines(Sequence[bytes]):
    """The lines of a ledger's bytes by their start offsets (without the newline), lazily."""

    def __init__(self, data: bytes, starts: np.ndarray, n: int) -> None:
        self.data, self.starts, self.n = data, starts, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self.n))]
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError(k)
        a = int(self.starts[k])
        b = int(self.starts[k + 1]) - 1 if k + 1 < len(self.starts) else self.data.index(b"\n", a)
        return self.data[a:b]


def _renumber(pop_of: np.ndarray, renum: dict[int, int], n: int) -> np.ndarray:
    table = np.full(max(n, 1), -1, dtype=np.int64)
    for p, i in renum.items():
        table[p] = i
    out: np.ndarray = table[pop_of] if pop_of.size else pop_of
    return out


class LedgerState:
    """What a release reads of a ledger (see the module docstring), for its first :attr:`n`
    entries (:attr:`size` bytes, last line hashing to :attr:`head`)."""

    def __init__(self) -> None:
        self.n, self.size, self.head = 0, 0, "0" * 64   # (the ledger's GENESIS)
        self.starts = np.zeros(0, dtype=np.int64)       # byte offset of every line
        self.first: dict[str, Any] | None = None
        self.releases: dict[str, list[Any]] = {}        # rid -> [status, seq, rerun_of]
        self.nonces: set[str] = set()
        self.guarantees: list[str] = []                 # distinct guarantees (canonical JSON)
        # [rid, guarantee index, dim, columns, label, scheme, series, private fit {"id", "eps"} or None]
        self.counted: list[list[Any]] = []
        self.root_of: dict[str, int] = {}               # counted root rid -> index in counted
        self.every: list[int] = []                      # counted releases touching every unit
        self.hashes = np.zeros(0, dtype=np.uint64)      # units of the counted releases (sorted)
        self.pop_of = np.zeros(0, dtype=np.int64)       # each unit's population (index in pops)
        self.pops: list[tuple[int, ...]] = []           # distinct sets of counted releases
        self.pop_count: list[int] = []
        self.registry: dict[str, np.ndarray] = {}       # unit secret -> registered unit hashes
        self.schemes: set[tuple[Any, Any]] = set()
        self.exact = True                               # False: recompute from every entry

    # ------------------------------------------------------------------ updates
    def apply(self, e: dict[str, Any], line: bytes, start: int, ledger_path: str) -> None:
        """Add entry ``e`` (its ``line``, starting at byte ``start``), verified by the caller."""
        from .unitsets import load_units

        if self.n == 0:
            self.first = e
        self.n += 1
        self.starts = np.append(self.starts, np.int64(start))
        self.size = start + len(line) + 1
        self.head = hashlib.sha256(line).hexdigest()
        ev, rid = e.get("event"), e.get("release_id")
        if rid is None:
            return
        if ev == "pending":
            self.releases[rid] = ["pending", e.get("seq"), e.get("rerun_of")]
            if e.get("nonce"):
                self.nonces.add(e["nonce"])
            u = e.get("units")
            hashes = load_units(e, ledger_path) if isinstance(u, dict) and u.get("kind") == "ids" else None
            if hashes is not None:
                sid = u.get("secret")  # type: ignore[union-attr]
                old = self.registry.get(sid)
                self.registry[sid] = hashes if old is None else np.union1d(old, hashes)
            root = e.get("rerun_of")
            if root is not None:
                if root in self.root_of:
                    return  # a re-run of a counted release: the totals do not change
                if root not in self.releases:
                    self.exact = False  # (a re-run of a release this ledger does not hold)
                    return
                rid = root  # a re-run that makes an aborted release count: it counts as that release
            self._count(rid, e, hashes)
        elif ev in ("completed", "resolved") and rid in self.releases:
            status = "completed" if ev == "completed" else e.get("outcome", "published")
            self.releases[rid][0] = status
            if status == "aborted":
                root = self.releases[rid][2] or rid
                if root in self.root_of and not self._other_live(root, rid):
                    self._uncount(root)  # recorded aborted by its own run: it counts for nothing

    def _uncount(self, root: str) -> None:
        """Remove counted release ``root`` from the populations (its record stays, unreferenced)."""
        k = self.root_of.pop(root)
        self.counted[k][0] = None
        if k in self.every:
            self.every.remove(k)
            return
        ids = {m: p for p, m in enumerate(self.pops) if self.pop_count[p] > 0}
        keep = np.ones(self.hashes.size, dtype=bool)
        for p in [p for p, c in enumerate(self.pop_count) if c > 0 and k in self.pops[p]]:
            sel = self.pop_of == p
            t = tuple(x for x in self.pops[p] if x != k)
            if not t:  # units no counted release touches any more
                keep &= ~sel
            else:
                q = ids.get(t)
                if q is None:
                    q = ids[t] = len(self.pops)
                    self.pops.append(t)
                    self.pop_count.append(0)
                self.pop_of[sel] = q
                self.pop_count[q] += self.pop_count[p]
            self.pop_count[p] = 0
        self.hashes, self.pop_of = self.hashes[keep], self.pop_of[keep]

    def _other_live(self, root: str, rid: str) -> bool:
        return any((r == root or st[2] == root) and r != rid and st[0] != "aborted"
                   for r, st in self.releases.items())

    def _count(self, rid: str, e: dict[str, Any], hashes: np.ndarray | None) -> None:
        g = json.dumps(e.get("guarantee"), sort_keys=True)
        try:
            gi = self.guarantees.index(g)
        except ValueError:
            gi = len(self.guarantees)
            self.guarantees.append(g)
        u = e.get("units") if isinstance(e.get("units"), dict) else {}
        scheme = None if hashes is None else [u.get("secret"), u.get("hash")]  # type: ignore[union-attr]
        k = len(self.counted)
        series = e.get("series") if isinstance(e.get("series"), dict) else None  # (a window of a planned series)
        fit = e.get("fit") if isinstance(e.get("fit"), dict) else {}
        pf = fit.get("private") if isinstance(fit.get("private"), dict) else None  # type: ignore[union-attr]
        private = None if pf is None else {"id": pf.get("id"), "eps": pf.get("eps")}   # counted in the totals
        self.counted.append([rid, gi, e.get("dim"), list(e.get("columns") or [1]), _unit_label(e), scheme, series,
                             private])
        self.root_of[rid] = k
        if hashes is None:
            self.every.append(k)
            return
        self.schemes.add((scheme[0], scheme[1]))  # type: ignore[index]
        if len(self.schemes) > 1:
            self.exact = False
        self._add_units(k, hashes)

    def _add_units(self, k: int, hashes: np.ndarray) -> None:
        idx = np.searchsorted(self.hashes, hashes)
        found = idx < self.hashes.size
        found[found] = self.hashes[idx[found]] == hashes[found]
        at = idx[found]
        if at.size:
            olds = self.pop_of[at]
            for p in np.unique(olds).tolist():
                sel = at[olds == p]
                q = len(self.pops)
                self.pops.append(self.pops[p] + (k,))
                self.pop_count.append(int(sel.size))
                self.pop_count[p] -= int(sel.size)
                self.pop_of[sel] = q
        new = hashes[~found]
        if new.size:
            q = len(self.pops)
            self.pops.append((k,))
            self.pop_count.append(int(new.size))
            allh = np.concatenate([self.hashes, new])
            allp = np.concatenate([self.pop_of, np.full(new.size, q, dtype=np.int64)])
            order = np.argsort(allh, kind="stable")
            self.hashes, self.pop_of = allh[order], allp[order]

    # ------------------------------------------------------------------ queries
    def record(self, k: int) -> dict[str, Any]:
        """Counted release ``k`` as the totals read it (:func:`puffer.publish.totals._total`)."""
        rid, gi, dim, cols, label, scheme, series, private = self.counted[k]
        parsed = self.__dict__.setdefault("_parsed", {})
        if gi not in parsed:
            parsed[gi] = json.loads(self.guarantees[gi])
        out: dict[str, Any] = {"release_id": rid, "guarantee": parsed[gi], "dim": dim,
                               "columns": cols, "unit": {"column": None if label == "(row)" else label}}
        out["units"] = {"kind": "all"} if scheme is None else {"kind": "ids", "secret": scheme[0], "hash": scheme[1]}
        if series is not None:
            out["series"] = series
        if private is not None:
            out["fit"] = {"private": private}
        return out

    def populations_with(self, units: np.ndarray | None) -> list[tuple[tuple[int, ...], int | None]]:
        """The maximal sets of counted releases a new release touching ``units`` (sorted unit
        hashes; None: every unit) would share units with, and how many units each has: the
        populations it would belong to, without it (:func:`puffer.publish.totals.populations`)."""
        ev = tuple(self.every)
        cands: list[tuple[tuple[int, ...], int | None]] = []
        if units is None:
            live = [(self.pops[p], c) for p, c in enumerate(self.pop_count) if c > 0]
            if not live:
                return [(ev, None)]
            cands = [(tuple(sorted(set(m) | set(ev))), c) for m, c in live]
        else:
            idx = np.searchsorted(self.hashes, units)
            found = idx < self.hashes.size
            found[found] = self.hashes[idx[found]] == units[found]
            pids, counts = np.unique(self.pop_of[idx[found]], return_counts=True)
            cands = [(tuple(sorted(set(self.pops[p]) | set(ev))), int(c)) for p, c in zip(pids.tolist(),
                                                                                           counts.tolist())]
            n_new = int(units.size - found.sum())
            if n_new:
                cands.append((ev, n_new))
        cands.sort(key=lambda mc: -len(mc[0]))
        kept: list[tuple[tuple[int, ...], int | None]] = []
        for m, c in cands:
            if not any(set(m) <= set(km) for km, _ in kept):
                kept.append((m, c))
        return kept

    def line(self, data: bytes, seq: int) -> bytes:
        """Line ``seq`` of the ledger's bytes ``data``."""
        line: bytes = Lines(data, self.starts, self.n)[seq]
        return line

    # ------------------------------------------------------------------ storage
    def to_dict(self) -> dict[str, Any]:
        live = [p for p, c in enumerate(self.pop_count) if c > 0]
        renum = {p: i for i, p in enumerate(live)}
        return {"format": INDEX_FORMAT, "n": self.n, "size": self.size, "head": self.head,
                "starts": _b64(self.starts, "<i8"), "first": self.first, "releases": self.releases,
                "nonces": "".join(sorted(self.nonces)) if all(len(x) == 32 for x in self.nonces) else
                sorted(self.nonces), "guarantees": self.guarantees, "counted": self.counted,
                "every": self.every, "hashes": _b64(self.hashes, "<u8"),
                "pop_of": _b64(_renumber(self.pop_of, renum, len(self.pops)), "<i8"),
                "pops": [list(self.pops[p]) for p in live], "pop_count": [self.pop_count[p] for p in live],
                "registry": {str(k): _b64(v, "<u8") for k, v in self.registry.items()},
                "schemes": sorted([list(s) for s in self.schemes], key=str)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LedgerState:
        st = cls()
        st.n, st.size, st.head = int(d["n"]), int(d["size"]), str(d["head"])
        st.starts = _unb64(d["starts"], "<i8").astype(np.int64)
        st.first = d["first"]
        # (the index's HMAC vouches for what puffer wrote: JSON objects and lists as they are)
        st.releases = d["releases"]
        nonces = d["nonces"]
        st.nonces = set(nonces) if isinstance(nonces, list) else {nonces[i:i + 32] for i in range(0, len(nonces), 32)}
        st.guarantees = d["guarantees"]
        st.counted = d["counted"]
        st.root_of = {c[0]: k for k, c in enumerate(st.counted) if c[0] is not None}
        st.every = d["every"]
        st.hashes = _unb64(d["hashes"], "<u8").astype(np.uint64)
        st.pop_of = _unb64(d["pop_of"], "<i8").astype(np.int64)
        st.pops = [tuple(int(k) for k in p) for p in d["pops"]]
        st.pop_count = [int(c) for c in d["pop_count"]]
        st.registry = {k: _unb64(v, "<u8").astype(np.uint64) for k, v in d["registry"].items()}
        st.schemes = {(s[0], s[1]) for s in d["schemes"]}
        if st.n != st.starts.size or st.hashes.size != st.pop_of.size or len(st.pops) != len(st.pop_count):
            raise ValueError("an inconsistent index")
        return st


def _mac_key(led: Any) -> bytes | None:
    """The index's HMAC key: derived from the signing key of a signed ledger, else from the
    unsigned ledger's unit secret (``L.unit-secret``, 0600); None (no index) without either."""
    sk = led.signing_key
    if sk is not None:
        return bytes(sk.derive(b"ledger-index"))
    from .unitsets import secret_file, unit_hasher

    if not os.path.exists(secret_file(led.path)):
        return None
    try:
        secret = unit_hasher(led.path, None)._secret
    except Exception:  # noqa: BLE001 - an unreadable secret: no index, the full verification
        return None
    return hmac.new(secret, _UNSIGNED_KEY, hashlib.sha256).digest()


def save_state(led: Any, st: LedgerState, data_prefix_sha256: str) -> None:
    """Write the index of ``st`` beside the ledger (atomically, mode 0600; called under the
    ledger's lock, which also removes the temporary files of killed runs); a failure to write it
    is not an error of the release (the next one verifies from the first entry)."""
    path = index_path(led.path)
    if not st.exact:  # an index that cannot answer exactly is not kept (the full computation is used)
        with contextlib.suppress(OSError):
            os.remove(path)
        return
    key = _mac_key(led)
    if key is None:
        return
    body = json.dumps({**st.to_dict(), "prefix_sha256": data_prefix_sha256}, separators=(",", ":")).encode("ascii")
    mac = hmac.new(key, body, hashlib.sha256).hexdigest()
    folder, base = os.path.dirname(path), os.path.basename(path)
    tmp = os.path.join(folder, f".{base}.tmp-{os.getpid()}-{secrets.token_hex(8)}")
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):  # of killed runs (every writer holds the ledger's lock)
            if name.startswith(f".{base}.tmp-"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            data = mac.encode("ascii") + b"\n" + body + b"\n"
            if os.write(fd, data) != len(data):
                raise OSError(28, "short write (disk full?)")
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        with contextlib.suppress(OSError):
            os.remove(path)  # never an index that no longer matches


def _read_index(led: Any) -> tuple[LedgerState, str] | None:
    try:
        raw = read_regular(index_path(led.path))
    except OSError:
        return None
    key = _mac_key(led)
    if key is None:
        return None
    mac, _, body = raw.partition(b"\n")
    want = hmac.new(key, body.rstrip(b"\n"), hashlib.sha256).hexdigest().encode("ascii")
    if not hmac.compare_digest(mac, want):
        return None
    try:
        d = loads(body.decode("ascii"))
        if not isinstance(d, dict) or d.get("format") != INDEX_FORMAT:
            return None
        return LedgerState.from_dict(d), str(d["prefix_sha256"])
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def load_state(led: Any, data: bytes, base: tuple[bytes, LedgerState] | None = None
               ) -> tuple[LedgerState, Any]:
    """The state of the ledger's bytes ``data`` (complete lines; a torn tail is the caller's):
    from the index where it covers a prefix of ``data`` with the digest it records (and, for a
    signed ledger, its HMAC verifies), or from ``base`` (the bytes and state this process
    verified before, when ``data`` starts with those bytes), the remaining entries verified and
    applied; otherwise every entry verified (:meth:`puffer.publish.ledger.Ledger._verify_lines`)
    and applied."""
    st: LedgerState | None = None
    h: Any = None  # the SHA-256 of data[:st.size], when known
    if base is not None and base[1].exact and len(base[0]) <= len(data) and data.startswith(base[0]):
        st = base[1]  # what this process verified itself, the same bytes (``base``: bytes, state)
    got = _read_index(led) if st is None else None
    if got is not None:
        cand, prefix = got
        if cand.size <= len(data) and (cand.size == 0 or data[cand.size - 1:cand.size] == b"\n") and cand.exact:
            h = hashlib.sha256(memoryview(data)[:cand.size])
            if h.hexdigest() == prefix:
                st = cand
            else:
                h = None
    if st is None:
        st = LedgerState()
        h = hashlib.sha256()
    rest = data[st.size:]
    lines = rest.split(b"\n")[:-1] if rest else []
    if st.n == 0:
        led._verify_lines(lines, crypto_from=led._trusted(lines))
    else:
        led._verify_tail(lines, st)
    entries = led._parse(lines)
    start = st.size
    for line, e in zip(lines, entries):
        st.apply(e, line, start, led.path)
        start += len(line) + 1
    if h is not None:
        h.update(memoryview(data)[len(data) - len(rest):] if rest else b"")
    return st, h


def full_lines(st: LedgerState, data: bytes) -> Lines:
    """Every complete line of ``data`` (that ``st`` covers), lazily."""
    return Lines(data, st.starts, st.n)
