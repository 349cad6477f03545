"""The one guarantee vocabulary: a base class, a registry of guarantee kinds and one loader.

Every guarantee kind (Pufferfish, DP-type, ε-TP, capacity bounded, ...) is a frozen dataclass
deriving from :class:`Guarantee` and registered with :func:`register_guarantee`. ``to_dict``
writes a ``"type"`` key; :func:`guarantee_from_dict` dispatches on it. Loading is strict:
an unknown key, a missing key or a mismatched type is a :class:`~puffer.ParameterError`
(a Rényi claim is never read back as a pure one).

Adding a guarantee kind: write a frozen dataclass deriving from :class:`Guarantee`, decorate it
with ``@register_guarantee``, put it in a module of this package and import that module in
``puffer/guarantees/__init__.py`` (the loader imports the package, so every kind is known).
Fields are serialised by name; validate them in ``__post_init__`` with ``puffer._validate``.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
from typing import Any, ClassVar, TypeVar

from ..errors import ParameterError, ParameterTypeError

__all__ = ["Guarantee", "register_guarantee", "guarantee_from_dict", "guarantee_from_json",
           "guarantee_types", "round_up", "encode_number", "decode_number"]

_REGISTRY: dict[str, type[Guarantee]] = {}
G = TypeVar("G", bound="type[Guarantee]")


def round_up(x: float, ulps: int = 4) -> float:
    """x moved up by a few ulps: covers the rounding of a short float formula (each step
    <= 1 ulp), so the result is an upper bound on the exact value."""
    if not math.isfinite(x):
        return x
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def _mul_up(a: float, n: int) -> float:
    """a * n rounded toward +inf (exact check with fractions: no needless ulp)."""
    from fractions import Fraction
    p = a * n
    if math.isfinite(p) and Fraction(p) < Fraction(a) * n:
        p = math.nextafter(p, math.inf)
    return p


def encode_number(x: float) -> Any:
    """JSON-safe float: +inf as the string "inf" (JSON has no infinity)."""
    return "inf" if x == math.inf else x


def decode_number(x: Any) -> Any:
    return math.inf if x == "inf" else x


def register_guarantee(cls: G) -> G:
    """Class decorator: make ``cls`` loadable by :func:`guarantee_from_dict` under its name."""
    name = cls.__name__
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise RuntimeError(f"two guarantee classes named {name!r}")
    _REGISTRY[name] = cls
    return cls


def guarantee_types() -> dict[str, type[Guarantee]]:
    """The registered guarantee kinds, by their ``"type"`` name."""
    _load_all()
    return dict(_REGISTRY)


def _load_all() -> None:
    # Guarantee modules register on import; importing the package imports them all.
    from .. import guarantees  # noqa: F401


def _suggest(key: str, options: list[str]) -> str:
    lower = {o.lower(): o for o in options}
    close = difflib.get_close_matches(key.lower(), list(lower), n=1)
    return f" (did you mean {lower[close[0]]!r}?)" if close else ""


class Guarantee:
    """Base of every guarantee kind. Subclasses are frozen dataclasses.

    Fields are serialised by name; fields whose metadata has ``json=False`` (e.g. a callable)
    are not. Numbers may be +inf ("inf" in JSON). The ``provenance`` field, where present, is a
    :class:`~puffer.guarantees.Provenance`.
    """

    #: the "type" string; the class name unless a subclass says otherwise
    type_name: ClassVar[str]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.type_name = cls.__name__

    # -- serialisation -------------------------------------------------------------------------
    @classmethod
    def _json_fields(cls) -> list[dataclasses.Field[Any]]:
        return [f for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if f.metadata.get("json", True)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": type(self).type_name}
        for f in self._json_fields():
            out[f.name] = _encode(getattr(self, f.name))
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: Any) -> Any:
        """Load a guarantee of this kind (or, on :class:`Guarantee` itself, of any kind)."""
        if not isinstance(d, dict):
            raise ParameterTypeError("d", d, "a dict made by a guarantee's to_dict()")
        t = d.get("type")
        _load_all()
        if t not in _REGISTRY:
            raise ParameterError("type", t, "one of the guarantee types "
                                 f"{sorted(_REGISTRY)}{_suggest(str(t), list(_REGISTRY))}")
        target = _REGISTRY[t]
        if cls is not Guarantee and not issubclass(target, cls):
            raise ParameterError("type", t, f"a {cls.type_name} guarantee (this dict holds a {t}; "
                                 "load any kind with puffer.guarantee_from_dict)")
        return target._from_fields(d)

    @classmethod
    def from_json(cls, s: Any) -> Any:
        if not isinstance(s, (str, bytes, bytearray)):
            raise ParameterTypeError("s", s, "a JSON string made by a guarantee's to_json()")
        try:
            d = json.loads(s)
        except ValueError as exc:
            raise ParameterError("s", s, f"valid JSON ({exc})") from None
        return cls.from_dict(d)

    @classmethod
    def _from_fields(cls, d: dict[str, Any]) -> Any:
        fields = {f.name: f for f in cls._json_fields()}
        extra = [k for k in d if k != "type" and k not in fields]
        if extra:
            raise ParameterError(extra[0], d[extra[0]], f"a key of a {cls.type_name} guarantee "
                                 f"({', '.join(fields)}){_suggest(extra[0], list(fields))}")
        kwargs = {}
        for name, f in fields.items():
            if name in d:
                kwargs[name] = cls._decode_field(name, d[name])
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ParameterError(name, "<missing>", f"the key {name!r} of a {cls.type_name} guarantee")
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, (ParameterError, ParameterTypeError)):
                raise
            raise ParameterError("d", d, f"a valid {cls.type_name} guarantee ({exc})") from None

    @classmethod
    def _decode_field(cls, name: str, v: Any) -> Any:
        if name == "provenance":
            from .provenance import Provenance
            return Provenance.from_dict(v)
        return _decode(v)

    def __repr__(self) -> str:
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)  # type: ignore[arg-type]
                 if f.repr]
        return f"{type(self).__name__}({', '.join(parts)})"


def _encode(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v):
            raise ParameterError("guarantee", v, "no NaN in a guarantee")
        return encode_number(v)
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_decode(x) for x in v)
    if isinstance(v, dict) and v.get("type") in _REGISTRY:
        return guarantee_from_dict(v)
    return decode_number(v)


def guarantee_from_dict(d: Any) -> Any:
    """Load any guarantee from ``to_dict()`` output, dispatching on its ``"type"``.

    >>> import puffer
    >>> puffer.guarantee_from_dict(puffer.RPP(2.0, 1.0).to_dict())
    RPP(alpha=2.0, eps=1.0)
    """
    return Guarantee.from_dict(d)


def guarantee_from_json(s: Any) -> Any:
    """Load any guarantee from ``to_json()`` output.

    >>> import puffer
    >>> puffer.guarantee_from_json('{"type": "PP", "eps": 1.0, "delta": 0.0, "provenance": null}')
    PP(eps=1.0, delta=0.0)
    >>> puffer.PP.from_json(puffer.RPP(2.0, 1.0).to_json())
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'type' = 'RPP': expected a PP guarantee (this dict holds a RPP; load any kind with puffer.guarantee_from_dict)
    """
    return Guarantee.from_json(s)
