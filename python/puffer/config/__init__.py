"""Framework description files (TOML or JSON): a strict schema, a loader and the builders.

Used by the ``puffer run`` CLI and by every other entry point that reads a framework file.
Unknown or misspelled keys are errors (with a "did you mean"); there are no default privacy
parameters: ``[target]`` with ``eps`` is required. See :mod:`puffer.config.schema` for the
schema, which the README reproduces.
"""
from .build import build_framework, build_mechanisms, markov_quilt_mechanisms
from .schema import SCHEMA_DOC, load_config, validate_config

__all__ = ["load_config", "validate_config", "build_framework", "build_mechanisms", "markov_quilt_mechanisms", "SCHEMA_DOC"]
