"""
puffer's compiled core (transport, Renyi quadrature, samplers). Use the puffer facade.
"""
from __future__ import annotations
from . import transport
from . import sampling
from . import renyi
from . import profile
from . import partial
from . import models
from . import kantorovich
from . import iteration
from . import common
from . import capacity
from . import accounting
__all__: list[str] = ['accounting', 'capacity', 'common', 'hardware_threads', 'iteration', 'kantorovich', 'models', 'partial', 'profile', 'renyi', 'sampling', 'transport']
def hardware_threads() -> int:
    """
    Number of hardware threads seen by the core.
    """
