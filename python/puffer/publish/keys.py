"""Release keys: the secret every published noise is derived from (``puffer keygen``).

A release is keyed by a secret of exactly 256 bits. It comes from

* a key file written by :func:`keygen` (``puffer keygen PATH``, mode 0600, never overwritten):
  the text format :data:`HEADER` below, with a *random* key id, the key and a check value, so
  that a hand-written, edited or truncated file is refused. :func:`load_key` also refuses a
  file that the group or others may access. Files of the earlier JSON format
  (``{"format": "puffer-key-v1", ...}``, 32 bytes) are still read, so that their releases can
  be re-run; any other content is refused with how to create a new key;
* 32 bytes given in the API (a random key id is drawn for the object);
* nothing: fresh OS entropy (``os.urandom``), the default. Such a release cannot be re-run
  (the key is not kept anywhere), which is the safe default.

Keys come from ``puffer keygen`` (:func:`keygen`) only: a key written by hand, a passphrase or
a hash of one can be found by guessing, and with it every true value. Visibly weak keys are
refused wherever they come from (:func:`weakness`): all one byte, a short repeated pattern or a
counting sequence, printable text (ASCII digits, hex or a password), 16 or fewer distinct byte
values, and any key that decodes as text in any script, compresses, or whose byte differences
take few values (a description of at most 215 bits, :func:`description_bits`). A key from
``os.urandom`` is refused by these rules with probability below 4.8e-13 (derived in
:func:`weakness`; :func:`keygen` then draws again). A string is always a *path*: key
material given where a path is expected is never echoed in a message, and error messages,
reprs and ledger entries never contain key material.

The file format (ASCII, one field per line)::

    puffer release key v2
    # secret: anyone holding this key and a ledger can remove the noise of its releases
    key_id: <32 hex digits, random>
    key: <64 hex digits>
    check: <16 hex digits: the first 8 bytes of SHA-256("puffer/v2/key-check" 0x00 key_id 0x00 key)>

The key id is drawn at random, independently of the key, so the ledger, which records only the
id, gives nothing to search offline. A small integer seed is refused in every publishing path
(it can be found by trying seeds, and then every noise value and every true value follow);
tests may opt in with ``insecure_seed=`` and the release is then recorded as insecure.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import secrets as _secrets
import stat
import zlib
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError, ParameterTypeError, PufferIOError
from ._files import check_private, fsync_dir, loads, shown_path, write_new

__all__ = ["Key", "keygen", "load_key", "as_key", "weakness", "description_bits", "KEY_BYTES", "HEADER", "SEED_REFUSED",
           "WEAK_BITS"]

KEY_BYTES = 32          # a release key: exactly 256 bits
HEADER = "puffer release key v2"
_V1_FORMAT = "puffer-key-v1"
_COMMENT = "# secret: anyone holding this key and a ledger can remove the noise of its releases"
_CHECK_DOMAIN = b"puffer/v2/key-check\x00"
_MAX_FILE = 4096        # a key file is about 200 bytes
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX16 = re.compile(r"[0-9a-f]{16}")

#: the message of every refusal of a small integer seed in a publishing path
SEED_REFUSED = ("a secret key, not an integer seed: a seed can be found by trying seeds, and then every "
                "true value follows from the published ones. Create a key with `puffer keygen PATH` and pass "
                "key=PATH (or --key PATH), or leave the key out for fresh OS entropy (not re-runnable)")
_NEW_KEY = "create a new key with `puffer keygen PATH` and pass its path"


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


def _periodic(b: bytes, longest: int) -> bool:
    """True if ``b`` repeats a pattern of at most ``longest`` bytes."""
    return any(all(b[i] == b[i - p] for i in range(p, len(b))) for p in range(1, min(longest, len(b) - 1) + 1))


# ------------------------------------------------------------------ weak keys: code lengths
#: a key is refused when one of the models below describes it in at most this many bits
#: (256 - 41): by the Kraft inequality a random key is that short with probability <= 2^-41
WEAK_BITS = 256 - 41
_MODELS = 4             # the mixture's models: text, deflate, differences, byte values (log2 4 = 2 bits)
_LOG2_NONASCII = math.log2(0x110000 - 0x80)


def _ascii_cost(c: int) -> float:
    """Bits of one ASCII character under the text model (a distribution over the 98 printable
    characters and tab, newline and carriage return that sums to 1; others: not text)."""
    ch = chr(c)
    if ch == " ":
        return 3.0                                  # 1/8
    if "a" <= ch <= "z":
        return math.log2(52)                        # 26 of 1/2
    if "A" <= ch <= "Z":
        return math.log2(208)                       # 26 of 1/8
    if "0" <= ch <= "9":
        return math.log2(80)                        # 10 of 1/8
    if 0x21 <= c <= 0x7E or ch in "\t\n\r":
        return math.log2(280)                       # the 32 others and 3 white spaces, 35 of 1/8
    return math.inf


def _text_bits(b: bytes) -> float:
    """Code length of ``b`` under a model of text: UTF-8 code points, each (after a 'go on' of
    probability 63/64) ASCII with probability 7/8 (:func:`_ascii_cost`) or a printable
    non-ASCII code point with 1/8: in the 128-block of the previous non-ASCII one with 1/2, in
    its 4096-block with 1/8, a CJK unified ideograph (U+4E00-U+9FFF) with 1/8, a Hangul syllable
    with 1/16, within 2^14 of the previous with 1/8 (a signed 15-bit offset), anywhere with 1/16
    (these sum to 1); a 'stop' (1/64) ends the text, followed by 0 to 3 raw bytes (2 bits for how many, 8
    bits each: a character cut off) and then NUL bytes only (padding). A sub-probability over
    32-byte strings: each string is the image of at most one sequence of symbols (UTF-8 decodes
    uniquely), so the Kraft sum is at most 1."""
    end = len(b)
    while end and b[end - 1] == 0:
        end -= 1
    text, cut = None, 0
    for cut in range(4):  # a character cut off at the end (a passphrase cut to 32 bytes)
        if cut > end:
            break
        try:
            text = b[:end - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    if text is None:
        return math.inf
    go = -math.log2(63 / 64)
    bits = 0.0 if end == len(b) and cut == 0 else 6.0 + 2.0 + 8.0 * cut   # stop, raw bytes
    prev = None
    for ch in text:
        c = ord(ch)
        if c < 0x80:
            bits += go + math.log2(8 / 7) + _ascii_cost(c)
            continue
        if not ch.isprintable():
            return math.inf
        bits += go + 3.0
        if prev is not None and c >> 7 == prev >> 7:
            bits += 1.0 + 7.0
        elif prev is not None and c >> 12 == prev >> 12:
            bits += 3.0 + 12.0
        elif 0x4E00 <= c <= 0x9FFF:
            bits += 3.0 + math.log2(0x9FFF - 0x4E00 + 1)
        elif 0xAC00 <= c <= 0xD7A3:
            bits += 4.0 + math.log2(0xD7A3 - 0xAC00 + 1)
        elif prev is not None and abs(c - prev) < 1 << 14:
            bits += 3.0 + 15.0
        else:
            bits += 4.0 + _LOG2_NONASCII
        prev = c
    return bits


def _deflate_bits(b: bytes) -> float:
    """8 x the length of ``b`` compressed by raw DEFLATE (RFC 1951, zlib level 9): its streams
    are self-delimiting (a decoder knows where the last block ends) and distinct inputs give
    distinct streams, so they form a prefix-free code of the inputs."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return 8.0 * len(c.compress(b) + c.flush())


def _few_values_bits(seq: bytes) -> float:
    """A code of ``seq`` (length n <= 255) by its set of k distinct values: k (8 bits), the
    values (8 bits each), then every element as an index (log2 k bits each; 0 for k = 1)."""
    k = len(set(seq))
    return 8.0 + 8.0 * k + len(seq) * math.log2(k) if seq else 8.0


def _diff_bits(b: bytes) -> float:
    """The first byte (8 bits), then the successive differences (mod 256) by
    :func:`_few_values_bits`: a counting sequence, or any key whose byte differences take few
    values."""
    diffs = bytes((b[i] - b[i - 1]) % 256 for i in range(1, len(b)))
    return 8.0 + _few_values_bits(diffs)


def description_bits(secret: bytes) -> float:
    """The shortest description of ``secret`` in bits under the mixture of the four models
    (text, DEFLATE, differences, byte values: :func:`_text_bits`, :func:`_deflate_bits`,
    :func:`_diff_bits`, :func:`_few_values_bits`), plus log2(4) = 2 bits to name the model:
    again a prefix code, so for uniformly random n-byte keys P(description_bits <= 8n - k)
    <= 2^-k (Kraft: at most 2^m strings have a code of at most m bits).

    >>> description_bits(b"tr0ub4dor&3 is my secret key!!!!") < WEAK_BITS
    True
    """
    b = bytes(secret)
    return math.log2(_MODELS) + min(_text_bits(b), _deflate_bits(b), _diff_bits(b), _few_values_bits(b))


def weakness(secret: bytes) -> str | None:
    """Why ``secret`` is a visibly weak key (a phrase that names no byte of it), or None.

    Rules, with their false-alarm rates for 32 bytes from ``os.urandom``:

    * a pattern of at most 8 bytes repeated, in the bytes or in their successive differences
      (a counting sequence such as ``bytes(range(32))``): < 2^-190;
    * every byte printable ASCII (digits, hex, base64, a password): (95/256)^32 = 1.7e-14;
    * 16 or fewer distinct byte values: 2.2e-15 (the occupancy distribution: sum over k <= 16 of
      C(256, k) S(32, k) k! / 256^32);
    * a key that *decodes as text* (UTF-8, any script, NUL padding), that *compresses*
      (DEFLATE), or whose *byte differences or bytes take few values*: its description under
      one of these four prefix codes (:func:`description_bits`) is at most :data:`WEAK_BITS`
      = 256 - 41 bits. By the Kraft inequality at most 2^215 of the 2^256 keys have such a
      description, so a random key is refused with probability <= 2^-41 = 4.6e-13.

    In all (union bound) a random 32-byte key is refused with probability below
    4.6e-13 + 1.7e-14 + 2.2e-15 + 2^-190 < 4.8e-13 < 1e-12 (:func:`keygen` then draws again).

    >>> weakness(b"0123456789abcdef0123456789abcdef")
    'a pattern of 16 bytes or fewer repeated'
    >>> weakness(bytes(range(32)))
    'a counting sequence (a repeated pattern in the differences of successive bytes)'
    >>> weakness(b"tr0ub4dor&3 is my secret key!!!" + bytes([10]))[:44]
    'text, or compressible, or with few distinct '
    >>> weakness(hashlib.sha256(b"doctest").digest()) is None
    True
    """
    b = bytes(secret)
    if len(set(b)) == 1:
        return "every byte the same"
    if _periodic(b, len(b) // 2):
        return "a pattern of 16 bytes or fewer repeated" if len(b) <= 32 else "a repeated pattern"
    diffs = bytes((b[i] - b[i - 1]) % 256 for i in range(1, len(b)))
    if _periodic(diffs, 8):
        return "a counting sequence (a repeated pattern in the differences of successive bytes)"
    if all(0x20 <= c < 0x7F for c in b):
        return "printable text (ASCII digits, hex, base64 or a password), not random bytes"
    if len(set(b)) <= 16:
        return f"only {len(set(b))} distinct byte values (32 random bytes have about 30)"
    bits = description_bits(b)
    if bits <= 8 * len(b) - 41:
        return (f"text, or compressible, or with few distinct byte differences (describable in {bits:.0f} bits, "
                f"random keys need {8 * len(b)})")
    return None


def _check_value(key_id: str, secret: bytes) -> str:
    return hashlib.sha256(_CHECK_DOMAIN + key_id.encode("ascii") + b"\x00" + secret).digest()[:8].hex()


def _render(key_id: str, secret: bytes) -> str:
    return (f"{HEADER}\n{_COMMENT}\nkey_id: {key_id}\nkey: {secret.hex()}\n"
            f"check: {_check_value(key_id, secret)}\n")


def _fresh_secret() -> bytes:
    while True:  # a weak draw has probability < 4.8e-13 (weakness); drawn again, never used
        s = os.urandom(KEY_BYTES)
        if weakness(s) is None:
            return s


def keygen(path: str | os.PathLike[str]) -> Key:
    """Write a new 256-bit key with a random id to ``path`` (mode 0600; an existing file is
    never overwritten) and return it. The file's format is in the module docstring.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "release.key")
    >>> k = keygen(p)
    >>> oct(os.stat(p).st_mode & 0o777), load_key(p).key_id == k.key_id
    ('0o600', True)
    >>> open(p).readline().strip()
    'puffer release key v2'
    """
    p = os.fspath(path)
    if not isinstance(p, str):
        raise ParameterTypeError("path", "a bytes path", "a file path (str)")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder):
        raise ParameterError("path", p, "a path in an existing folder")
    key = Key(_fresh_secret(), _new_id(), "file", path=os.path.abspath(p))
    doc = _render(key.key_id, key.secret)
    write_new(p, doc.encode("ascii"), 0o600, "key")  # 0600, never overwritten, nothing partial left
    fsync_dir(folder)
    return key


def _not_a_key_file(shown: str, why: str) -> ParameterError:
    return ParameterError("key", shown, f"a key file written by `puffer keygen` ({why}); {_NEW_KEY}")


def _parse_v2(lines: list[str], shown: str) -> tuple[str, bytes]:
    fields: dict[str, str] = {}
    for ln in lines[1:]:
        if not ln or ln.startswith("#"):
            continue
        name, sep, value = ln.partition(": ")
        if not sep or name not in ("key_id", "key", "check") or name in fields:
            raise _not_a_key_file(shown, "a line that is not one of key_id, key, check")
        fields[name] = value.strip()
    if set(fields) != {"key_id", "key", "check"}:
        raise _not_a_key_file(shown, f"{len(fields)} of its 3 fields: truncated or edited")
    if not (_HEX32.fullmatch(fields["key_id"]) and _HEX64.fullmatch(fields["key"])
            and _HEX16.fullmatch(fields["check"])):
        raise _not_a_key_file(shown, "a field of the wrong length or not lower-case hex")
    kid, secret = fields["key_id"], bytes.fromhex(fields["key"])
    if not _secrets.compare_digest(_check_value(kid, secret), fields["check"]):
        raise _not_a_key_file(shown, "its check value does not match: edited, truncated or hand-written")
    return kid, secret


def _parse_v1(text: str, shown: str) -> tuple[str, bytes]:
    try:
        doc = loads(text)
    except ValueError:
        raise _not_a_key_file(shown, "not a key file of either format") from None
    if not (isinstance(doc, dict) and set(doc) == {"format", "key_id", "key"} and doc["format"] == _V1_FORMAT
            and isinstance(doc["key_id"], str) and _HEX32.fullmatch(doc["key_id"])
            and isinstance(doc["key"], str) and re.fullmatch(r"(?:[0-9a-f]{2})+", doc["key"])):
        raise _not_a_key_file(shown, "not a key file of either format")
    secret = bytes.fromhex(doc["key"])
    if len(secret) != KEY_BYTES:
        raise _not_a_key_file(shown, f"a key of {len(secret)} bytes; keys have {KEY_BYTES} (`puffer keygen` never "
                              "wrote another size, so the file was written by hand)")
    return doc["key_id"], secret


def load_key(path: str | os.PathLike[str]) -> Key:
    """The key of a file written by :func:`keygen`; refused if group/world accessible, not in
    the format (module docstring), failing its check, or weak. No message shows its content.

    >>> load_key("0123456789abcdef0123456789abcdef")
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'key' = <the value given (not shown: it may be key material)>: expected the path of an existing key file...
    """
    p = os.fspath(path)
    if not isinstance(p, str):
        raise ParameterTypeError("key", "a bytes path", "a key file path (str) or the key's 32 bytes")
    shown = shown_path(p)
    try:
        st = os.stat(p)   # a NUL byte (raw key bytes given as the path) is a ValueError, not an OSError
    except (FileNotFoundError, NotADirectoryError, ValueError):
        # shown only when it cannot be key material (shown_path: ``--key ./BASE64TEXT`` is not)
        extra = ("; a key given on the command line is visible to other users (ps, shell history): treat it as "
                 "exposed and " + _NEW_KEY) if shown != p else f" ({_NEW_KEY})"
        raise ParameterError("key", shown, "the path of an existing key file" + extra) from None
    except OSError as exc:
        raise PufferIOError(shown, "reading the key file", exc.strerror or type(exc).__name__) from None
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError("key", shown, "a regular key file")
    check_private(st.st_mode, "key", shown, "key file")
    if st.st_size > _MAX_FILE:
        raise _not_a_key_file(shown, f"{st.st_size} bytes; a key file has about 200")
    try:
        with open(p, "rb") as fh:
            raw = fh.read(_MAX_FILE + 1)
    except OSError as exc:
        raise PufferIOError(shown, "reading the key file", exc.strerror or type(exc).__name__) from None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:  # its message would quote a byte of the file
        raise _not_a_key_file(shown, "not ASCII text") from None
    lines = text.split("\n")
    if lines[0].strip() == HEADER:
        kid, secret = _parse_v2([ln.rstrip("\r") for ln in lines], shown)
    elif text.lstrip().startswith("{"):
        kid, secret = _parse_v1(text, shown)
    else:
        raise _not_a_key_file(shown, f"its first line is not {HEADER!r}")
    why = weakness(secret)
    if why is not None:
        raise _not_a_key_file(shown, f"the key in it is visibly weak: {why}")
    return Key(secret, kid, "file", path=os.path.abspath(p))


def as_key(key: Any = None, *, insecure_seed: Any = None) -> Key:
    """The :class:`Key` a ``key=`` argument stands for: None (fresh OS entropy), a key file path,
    the key's 32 bytes or a :class:`Key`. Weak keys are refused (:func:`weakness`), an integer
    too (see :data:`SEED_REFUSED`); no message shows any of the value given.
    ``insecure_seed`` (tests only): a non-negative int whose key is recorded as insecure.

    >>> import hashlib
    >>> as_key(hashlib.sha256(b"doctest").digest()).source
    'bytes'
    >>> as_key(b"0123456789abcdef")
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'key' = 16 bytes: expected exactly 32 bytes (256 bits) of secret key...
    >>> as_key(7)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterTypeError: parameter 'key' = an integer (not shown): expected a secret key, ...
    """
    import numbers

    if insecure_seed is not None:
        if key is not None:
            raise ParameterError("insecure_seed", insecure_seed, "None when key= is given")
        if isinstance(insecure_seed, bool) or not isinstance(insecure_seed, numbers.Integral) or insecure_seed < 0:
            raise ParameterTypeError("insecure_seed", insecure_seed, "a non-negative integer (tests only)")
        secret = hashlib.sha256(b"puffer insecure test seed v1\x00" + str(int(insecure_seed)).encode()).digest()
        return Key(secret, _new_id(), "insecure-seed", insecure=True)
    if key is None:
        return Key(_fresh_secret(), _new_id(), "os-entropy")
    if isinstance(key, Key):
        if not key.insecure and (not isinstance(key.secret, bytes) or len(key.secret) != KEY_BYTES
                                 or weakness(key.secret) is not None):
            raise ParameterError("key", repr(key), f"a Key of {KEY_BYTES} bytes that are not visibly weak "
                                 f"(see puffer.publish.keys.weakness); {_NEW_KEY}")
        return key
    if isinstance(key, (bytes, bytearray, memoryview)):
        b = bytes(key)
        if len(b) != KEY_BYTES:
            raise ParameterError("key", f"{len(b)} bytes", f"exactly {KEY_BYTES} bytes (256 bits) of secret key "
                                 f"from a cryptographic source such as os.urandom; or {_NEW_KEY}")
        why = weakness(b)
        if why is not None:
            raise ParameterError("key", f"{len(b)} bytes", f"a key that is not visibly weak (this one is {why}); "
                                 f"{_NEW_KEY}")
        return Key(b, _new_id(), "bytes")
    if isinstance(key, (str, os.PathLike)):
        return load_key(key)
    if isinstance(key, numbers.Integral) or hasattr(key, "__index__"):
        raise ParameterTypeError("key", "an integer (not shown)", SEED_REFUSED)
    raise ParameterTypeError("key", f"an object of type {type(key).__name__} (not shown)",
                             f"a key file path, the key's {KEY_BYTES} bytes, a puffer.io.Key or None")


def refuse_seed(seed: Any) -> None:
    """The error every publishing path raises for ``seed=`` (kept as a keyword only to say why)."""
    if seed is not None:
        small = isinstance(seed, int) and not isinstance(seed, bool) and abs(seed) < 1 << 32
        raise ParameterError("seed", seed if small else "a value (not shown: it may be key material)", SEED_REFUSED)
