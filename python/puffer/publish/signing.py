"""Signing keys of a ledger: Ed25519 (RFC 8032) through the ``cryptography`` package.

``puffer keygen --signing PATH`` (:func:`signing_keygen`) writes an Ed25519 private key to
``PATH`` (PKCS#8 PEM, mode 0600, never overwritten) and its public key to ``PATH.pub``
(SubjectPublicKeyInfo PEM): standard formats, so an auditor can check a signature with any
Ed25519 implementation (``openssl pkeyutl -verify -rawin``). A release signed with ``--sign
PATH`` (``signing_key=``) records in every ledger entry the signer's key id and public key, and
a signature over the entry's hash (:mod:`puffer.publish.ledger`); anyone holding ``PATH.pub``
can verify the ledger, no secret needed (``puffer ledger verify L --pub PATH.pub``).

The key id is the first 128 bits of ``SHA-256("puffer/v1/signing-key" || 0x00 || raw public
key)``: public, like the key it names. Signed messages are domain-separated
(:data:`ENTRY_DOMAIN`, :data:`CHECKPOINT_DOMAIN`), so an entry's signature can never pass as a
checkpoint's. A :class:`SigningKey` refuses to be pickled (it never travels to a worker) and its
repr shows only the key id; no error message contains key material.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from typing import Any

from ..errors import ParameterError, ParameterTypeError, PufferIOError
from ._files import check_private, fsync_dir, shown_path, write_new

__all__ = ["SigningKey", "PublicKey", "signing_keygen", "load_signing_key", "load_public_key", "as_signing_key",
           "as_public_key", "ENTRY_DOMAIN", "CHECKPOINT_DOMAIN", "signing_key_id"]

ENTRY_DOMAIN = b"puffer/v1/ledger-entry\x00"
CHECKPOINT_DOMAIN = b"puffer/v1/ledger-checkpoint\x00"
_ID_DOMAIN = b"puffer/v1/signing-key\x00"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX128 = re.compile(r"^[0-9a-f]{128}$")


def _crypto() -> Any:
    """The Ed25519 module of ``cryptography``, or a clear error naming the extra."""
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ModuleNotFoundError as exc:  # pragma: no cover - the io/spark/dask extras install it
        raise ModuleNotFoundError("signed ledgers need the cryptography package: pip install "
                                  "'puffer-privacy[io]'") from exc
    return ed25519


def signing_key_id(raw_public: bytes) -> str:
    """The key id of an Ed25519 public key (32 raw bytes): 32 hex digits."""
    return hashlib.sha256(_ID_DOMAIN + raw_public).hexdigest()[:32]


class PublicKey:
    """An Ed25519 public key: ``raw`` (32 bytes), ``hex``, ``key_id``; :meth:`verify`."""

    def __init__(self, raw: bytes) -> None:
        if not isinstance(raw, bytes) or len(raw) != 32:
            raise ParameterError("public_key", f"{len(raw)} bytes" if isinstance(raw, bytes) else raw,
                                 "32 bytes of an Ed25519 public key")
        self.raw = raw
        self.hex = raw.hex()
        self.key_id = signing_key_id(raw)
        self._key = _crypto().Ed25519PublicKey.from_public_bytes(raw)

    @classmethod
    def from_hex(cls, text: Any, *, what: str = "public_key") -> PublicKey:
        if not isinstance(text, str) or not _HEX64.match(text):
            raise ParameterError(what, str(text)[:80], "64 lower-case hex digits (an Ed25519 public key)")
        return cls(bytes.fromhex(text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicKey) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __repr__(self) -> str:
        return f"PublicKey(key_id={self.key_id!r})"

    def describe(self) -> dict[str, str]:
        """What an entry records as its ``signer``."""
        return {"key_id": self.key_id, "public_key": self.hex, "algorithm": "ed25519"}

    def verify(self, domain: bytes, message: bytes, signature: Any) -> bool:
        """Whether ``signature`` (128 hex digits) signs ``domain || message`` under this key."""
        if not isinstance(signature, str) or not _HEX128.match(signature):
            return False
        from cryptography.exceptions import InvalidSignature

        try:
            self._key.verify(bytes.fromhex(signature), domain + message)
        except InvalidSignature:
            return False
        return True


class SigningKey:
    """An Ed25519 private key (:func:`load_signing_key`, :func:`signing_keygen`): ``key_id``,
    ``public`` (:class:`PublicKey`), :meth:`sign`. Never printed, never pickled."""

    def __init__(self, private: Any, path: str | None = None) -> None:
        from cryptography.hazmat.primitives import serialization

        self._private = private
        self.path = path
        raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.public = PublicKey(raw)
        self.key_id = self.public.key_id

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self.key_id!r})"

    def __reduce__(self) -> Any:
        raise TypeError("a puffer SigningKey is not picklable: it stays on the driver that writes the ledger")

    def sign(self, domain: bytes, message: bytes) -> str:
        """The Ed25519 signature of ``domain || message`` (128 hex digits)."""
        return str(self._private.sign(domain + message).hex())

    def derive(self, label: bytes) -> bytes:
        """A 256-bit secret derived from the private key for ``label`` (HMAC-SHA256 as a PRF
        keyed by the private key's 32 raw bytes): secrets of a signed ledger that only the
        signer can compute."""
        from cryptography.hazmat.primitives import serialization

        raw = self._private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                          serialization.NoEncryption())
        return hmac.new(raw, b"puffer/v1/derive\x00" + label, hashlib.sha256).digest()


def signing_keygen(path: str | os.PathLike[str]) -> SigningKey:
    """Write a new Ed25519 signing key to ``path`` (mode 0600) and its public key to
    ``path + ".pub"``; neither is ever overwritten.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "ledger.sign")
    >>> k = signing_keygen(p)
    >>> oct(os.stat(p).st_mode & 0o777), load_public_key(p + ".pub").key_id == k.key_id
    ('0o600', True)
    """
    from cryptography.hazmat.primitives import serialization

    p = os.fspath(path)
    if not isinstance(p, str) or not p:
        raise ParameterTypeError("path", path, "a file path")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder):
        raise ParameterError("path", p, "a path in an existing folder")
    for q in (p, p + ".pub"):
        if os.path.lexists(q):
            raise ParameterError("path", q, "a path where no file exists (a key is never overwritten)")
    private = _crypto().Ed25519PrivateKey.generate()
    key = SigningKey(private, os.path.abspath(p))
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    pub = private.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    write_new(p, pem, 0o600, "signing key")
    try:
        write_new(p + ".pub", pub, 0o644, "public key")
    except BaseException:
        os.unlink(p)
        raise
    fsync_dir(folder)
    return key


def _read(path: str, what: str, private: bool) -> bytes:
    # key material given as the path (a private key's PEM, also where the public key goes) is never echoed
    shown = shown_path(path)
    try:
        st = os.stat(path)   # a NUL byte in the path raises ValueError
    except (FileNotFoundError, NotADirectoryError, ValueError):
        hint = " (create one with `puffer keygen --signing PATH`)" if private else ""
        raise ParameterError(what, shown, f"an existing {'signing' if private else 'public'} key file{hint}") from None
    except OSError as exc:
        raise PufferIOError(shown, f"reading the {what}", exc.strerror or exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError(what, shown, "a regular key file")
    if private:
        check_private(st.st_mode, what, shown, "signing key file")
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 16)
    except OSError as exc:
        raise PufferIOError(shown, f"reading the {what}", exc.strerror or exc) from None


def load_signing_key(path: str | os.PathLike[str]) -> SigningKey:
    """The Ed25519 signing key of a file written by :func:`signing_keygen` (refused if the group
    or others may read it, or if it is not an Ed25519 private key)."""
    from cryptography.hazmat.primitives import serialization

    p = os.fspath(path)
    data = _read(p, "signing_key", True)
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):  # the parser's message is not shown: it may quote key bytes
        private = None
    if not isinstance(private, _crypto().Ed25519PrivateKey):
        raise ParameterError("signing_key", shown_path(p), "an unencrypted Ed25519 private key in PEM (written by `puffer "
                             "keygen --signing PATH`)")
    return SigningKey(private, os.path.abspath(p))


def load_public_key(path: str | os.PathLike[str]) -> PublicKey:
    """The Ed25519 public key of a ``.pub`` file written by :func:`signing_keygen`."""
    from cryptography.hazmat.primitives import serialization

    p = os.fspath(path)
    data = _read(p, "pub", False)
    try:
        public = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        public = None
    if not isinstance(public, _crypto().Ed25519PublicKey):
        raise ParameterError("pub", shown_path(p), "an Ed25519 public key in PEM (the .pub file of `puffer keygen "
                             "--signing`)")
    return PublicKey(public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def as_signing_key(key: Any) -> SigningKey | None:
    """The :class:`SigningKey` a ``signing_key=`` argument stands for: None, a key file path or a
    :class:`SigningKey`."""
    if key is None or isinstance(key, SigningKey):
        return key
    if isinstance(key, (str, os.PathLike)):
        return load_signing_key(key)
    raise ParameterTypeError("signing_key", f"<a {type(key).__name__}>", "a signing key file (`puffer keygen "
                             "--signing PATH`), a puffer.publish.SigningKey or None")


def as_public_key(key: Any) -> PublicKey | None:
    """The :class:`PublicKey` a ``pub=`` argument stands for: None, a ``.pub`` file path, a
    :class:`PublicKey` or a :class:`SigningKey` (its public half)."""
    if key is None or isinstance(key, PublicKey):
        return key
    if isinstance(key, SigningKey):
        return key.public
    if isinstance(key, (str, os.PathLike)):
        return load_public_key(key)
    raise ParameterTypeError("pub", f"<a {type(key).__name__}>", "a public key file (PATH.pub of `puffer keygen "
                             "--signing PATH`), a puffer.publish.PublicKey or None")
