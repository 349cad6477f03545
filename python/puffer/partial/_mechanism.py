"""What the epsilon-TP mechanisms share with :class:`puffer.mechanisms.Mechanism`: ``refs``,
``target``, ``guarantee`` and a JSON-able ``to_dict`` (their sensitivity is Delta_z of a
:class:`~puffer.partial.TPFramework`, not a :class:`puffer.Sensitivity`, and their noise is not
additive in general, hence a separate small base)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..guarantees import encode_number

if TYPE_CHECKING:
    from ..guarantees.tp import TP
    from ..refs import Ref
    from .frameworks import TPFramework


class TPMechanism:
    refs: tuple[Ref, ...] = ()
    eps: float
    guarantee: TP
    framework: TPFramework

    @property
    def target(self) -> dict[str, float]:
        return {"eps": self.eps}

    def _noise_description(self) -> Any:
        return None

    def to_dict(self) -> dict[str, Any]:
        sig = getattr(self, "sigma", None)
        return {"mechanism": type(self).__name__, "refs": [r.to_dict() for r in self.refs],
                "target": {k: encode_number(float(v)) for k, v in self.target.items()},
                "noise": self._noise_description(),
                "sensitivity": {"delta_z": encode_number(float(self.framework.delta_z)),
                                "sigma": None if sig is None else encode_number(float(sig))},
                "guarantee": self.guarantee.to_dict(), "framework": self.framework.guarantee_fields()}
