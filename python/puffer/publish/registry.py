"""Unit ids in one canonical form, and the registry of a ledger's units.

A ledger cannot know that two spellings name one person: ``17``, ``"17.0"``, ``"17e0"``,
``"0x11"``, fullwidth ``"１７"``, Arabic-Indic ``"١٧"`` and ``"17\\u200b"`` hash to seven units,
so a pipeline that casts ids to float and back (or an adversary) splits one household into
populations that each keep their own total, and averaging their releases gives back the exact
values. So puffer stops guessing:

**Canonical forms** (:func:`canonical_id`, applied by
:meth:`puffer.publish.unitsets.UnitHasher.hashes` to every id of every engine):

* an *integer* id is a non-negative integer; its text is plain ASCII decimal, no sign, no
  leading zeros (``17``). A *string* made of such digits (``"17"``) is that integer;
* a *string* id is in Unicode NFC, holds no control, format (invisible: zero-width spaces and
  joiners, BOM), private-use, unassigned or separator character other than the ASCII space,
  and no surrounding white space, and does not spell a number in any other way (a sign,
  leading zeros, a decimal point or exponent, hexadecimal, non-ASCII digits);
* anything else is refused with a :class:`~puffer.errors.ParameterError` naming the id.

**The registry** (:func:`check_registry`): the units a ledger has released are its registry
(the keyed hashes its entries record and sign, :mod:`puffer.publish.unitsets`; nothing is kept
beside them, so a refused release leaves no file). The first release of a ledger with a unit
column registers its units (learned). A later release whose units are not all registered is
refused unless it declares them new (``new_units=True``, ``--new-units``): the entry records how
many were new (``unit_registry``), and they count from then on. A release whose units are
mostly new while registered units are absent from it (what re-spelled ids look like) is
recorded with a warning in its entry and warned about (:class:`UnitRegistryWarning`).
Registry comparisons use one unit secret (the entry's ``units.secret``): unit sets under
another secret are not registered units of this one.
"""
from __future__ import annotations

import re
import unicodedata
import warnings
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError

__all__ = ["canonical_id", "check_registry", "UnitRegistryWarning", "NEW_UNITS"]

_ASCII_DEC = re.compile(r"(?:0|[1-9][0-9]*)")
#: what spells a number once non-ASCII digits are read as digits (signs, leading zeros, a
#: decimal point or exponent, hexadecimal/octal/binary prefixes, digit-group separators)
_NUMBER = re.compile(r"[+\-\u2212]?\s*(?:0[xX][0-9a-fA-F_]+|0[oObB][0-9_]+|(?:[0-9][0-9_,']*(?:\.[0-9_]*)?|\.[0-9]"
                     r"[0-9_]*)(?:[eE][+\-]?[0-9]+)?)\s*")
_BAD_CATEGORIES = {"Cc": "a control character", "Cf": "an invisible (format) character", "Co": "a private-use "
                   "character", "Cn": "an unassigned code point", "Cs": "a surrogate", "Zl": "a line separator",
                   "Zp": "a paragraph separator", "Zs": "a space other than the ASCII space"}
_INT = ("a canonical integer id: plain ASCII decimal digits, no sign, no leading zeros (e.g. 17); re-spelled ids "
        "would be new units and split the totals: convert the column to its canonical ids")
_STR = ("a canonical string id: Unicode NFC, no control or invisible characters, no surrounding white space, and no "
        "other spelling of a number than plain ASCII decimal (re-spelled ids would be new units and split the "
        "totals: convert the column to its canonical ids)")

#: the expectation of every refusal of unregistered units
NEW_UNITS = ("unit ids registered in the ledger (released into it before), or new_units=True (--new-units) to "
             "declare new units (recorded and counted): a re-spelled id (17.0 for 17) is a new unit to the ledger "
             "and would split the totals")


class UnitRegistryWarning(UserWarning):
    """A release whose units are mostly new while registered units are absent from it."""


def _digits_ascii(s: str) -> str:
    """``s`` with every Unicode decimal digit as its ASCII digit (other characters kept)."""
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in s)


def canonical_id(v: Any) -> int | str:
    """The canonical form of one unit id (see the module docstring): an ``int`` for integer ids
    and strings of plain decimal digits, else the string itself; refused otherwise.

    >>> canonical_id(17), canonical_id("17"), canonical_id("hh-17")
    (17, 17, 'hh-17')
    >>> canonical_id("17.0")
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'unit' = '17.0': expected a canonical integer id: ...
    """
    if isinstance(v, (bool, np.bool_)):
        raise ParameterTypeError("unit", repr(v), "integer or string unit ids")
    if isinstance(v, (int, np.integer)):
        iv = int(v)
        if iv < 0:
            raise ParameterError("unit", iv, _INT)
        return iv
    if not isinstance(v, str):
        raise ParameterTypeError("unit", f"an id of type {type(v).__name__}", "integer or string unit ids")
    if _ASCII_DEC.fullmatch(v):
        return int(v)
    if not v or v != v.strip():
        raise ParameterError("unit", repr(v), _STR + " (this one is empty or has surrounding white space)")
    if unicodedata.normalize("NFC", v) != v:
        raise ParameterError("unit", ascii(v), _STR + " (this one is not in NFC)")
    for c in v:
        cat = unicodedata.category(c)
        if cat in _BAD_CATEGORIES and c != " ":
            raise ParameterError("unit", ascii(v), _STR + f" (this one holds {_BAD_CATEGORIES[cat]}, U+{ord(c):04X})")
    folded = _digits_ascii(unicodedata.normalize("NFKC", v))
    if any(ch.isdigit() for ch in folded) and _NUMBER.fullmatch(folded):
        raise ParameterError("unit", ascii(v), _INT + " (this one spells a number another way)")
    return v


def canonical_text(v: Any) -> str:
    """The text an id is hashed as: its canonical form in decimal or as given (UTF-8 later)."""
    c = canonical_id(v)
    return str(c)


def check_registry(registered: np.ndarray, units: np.ndarray | None, *, new_units: bool) -> dict[str, Any] | None:
    """Check a release's sorted distinct unit hashes ``units`` against the ``registered`` ones
    (see the module docstring); returns the entry's ``unit_registry`` field (None: the release
    names no unit, so it is taken to touch every unit and registers nothing). Refuses
    (ParameterError naming ``new_units``) unregistered units without ``new_units``, and
    ``new_units`` when nothing is new (an ignored option is an error).

    >>> r = np.array([1, 2, 3], dtype=np.uint64)
    >>> check_registry(r, np.array([2, 3], dtype=np.uint64), new_units=False)["new"]
    0
    >>> check_registry(r, np.array([3, 4], dtype=np.uint64), new_units=False)
    Traceback (most recent call last):
    ...
    puffer.errors.ParameterError: parameter 'new_units' = False: expected unit ids registered in the ledger ...
    """
    if not isinstance(new_units, bool):
        raise ParameterTypeError("new_units", new_units, "True or False")
    if units is None:
        if new_units:
            raise ParameterError("new_units", True, "False for a release whose rows name no unit (no unit column: "
                                 "nothing to register)")
        return None
    units = np.asarray(units, dtype=np.uint64)
    n = int(units.size)
    if registered.size == 0:
        return {"registered": 0, "new": n, "learned": True, "declared_new": bool(new_units), "absent": 0}
    new = int(np.count_nonzero(~np.isin(units, registered, assume_unique=True)))
    absent = int(registered.size) - (n - new)
    if new and not new_units:
        raise ParameterError("new_units", False, f"{NEW_UNITS}. {new} of the {n} unit ids of this release were never "
                             f"released into this ledger ({registered.size} units are registered)")
    if new_units and not new:
        raise ParameterError("new_units", True, f"a release with new units: all {n} unit ids of this release are "
                             "registered (drop --new-units)")
    out: dict[str, Any] = {"registered": int(registered.size), "new": new, "learned": False,
                           "declared_new": bool(new_units), "absent": absent}
    if new and 2 * new > n and absent > 0:
        out["warning"] = (f"{new} of the {n} units are new while {absent} registered units are absent: if the new "
                          "ids are re-spellings of registered ones, the totals are split and understate what was "
                          "released about those units")
        warnings.warn(f"puffer: release declares {new} new units: {out['warning']}", UnitRegistryWarning,
                      stacklevel=4)
    return out
