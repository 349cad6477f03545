"""Where a guarantee came from: mechanism, cited results, sensitivity with witness, noise, framework.

Where a guarantee came from: mechanism, cited results (:class:`~puffer.refs.Ref`),
sensitivity and witness, noise, framework digest."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..errors import ParameterError, ParameterTypeError
from ..refs import Ref

__all__ = ["Provenance"]


@dataclass(frozen=True)
class Provenance:
    """Where a guarantee came from.

    mechanism: the class or function name (``"GeneralWasserstein"``); refs: the results used,
    in order (the theorem of the mechanism first, then conversions such as Prop 2.2);
    theorem: a human-readable summary; sensitivity: the sensitivity used (None if not
    applicable); witness: where it was attained (e.g. ``{"theta": 3, "pair": ["X_1=0", "X_1=1"]}``);
    noise: a description of the noise law; framework: a digest of the framework; notes: free text.
    """

    mechanism: str = ""
    theorem: str = ""
    sensitivity: float | None = None
    witness: Any = None
    noise: Any = None
    framework: str | None = None
    notes: str = ""
    refs: tuple[Ref, ...] = field(default=())

    def __post_init__(self) -> None:
        refs = self.refs
        if isinstance(refs, Ref):
            refs = (refs,)
        if not isinstance(refs, (tuple, list)):
            raise ParameterTypeError("refs", refs, "a tuple of puffer.refs.Ref")
        out = []
        for r in refs:
            if isinstance(r, dict):
                r = Ref.from_dict(r)
            if not isinstance(r, Ref):
                raise ParameterTypeError("refs", r, "a puffer.refs.Ref")
            out.append(r)
        object.__setattr__(self, "refs", tuple(out))

    def cite(self, *refs: Ref, notes: str = "") -> Provenance:
        """A copy with ``refs`` appended (and ``notes`` added)."""
        new = tuple(r for r in refs if r not in self.refs)
        n = (self.notes + " " + notes).strip() if notes else self.notes
        return replace(self, refs=self.refs + new, notes=n)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism, "theorem": self.theorem, "sensitivity": self.sensitivity,
            "witness": self.witness, "noise": self.noise, "framework": self.framework,
            "notes": self.notes, "refs": [r.to_dict() for r in self.refs],
        }

    @classmethod
    def from_dict(cls, d: Any) -> Provenance | None:
        if d is None:
            return None
        if isinstance(d, Provenance):
            return d
        if not isinstance(d, dict):
            raise ParameterTypeError("provenance", d, "a dict made by Provenance.to_dict() or None")
        names = [f.name for f in fields(cls)]
        for k in d:
            if k not in names:
                close = difflib.get_close_matches(k, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ParameterError(f"provenance.{k}", d[k], f"a Provenance key ({', '.join(names)}){hint}")
        kw: dict[str, Any] = {k: (tuple(d[k]) if k == "refs" else d[k]) for k in d}
        return cls(**kw)

    def __hash__(self) -> int:
        return hash((self.mechanism, self.theorem, self.sensitivity, self.framework, self.refs))


def as_provenance(p: Any) -> Provenance | None:
    """Accept a Provenance, its dict form or None."""
    if p is None or isinstance(p, Provenance):
        return p
    if isinstance(p, dict):
        return Provenance.from_dict(p)
    raise ParameterError("provenance", p, "a Provenance, a dict or None")
