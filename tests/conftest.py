"""Shared test set-up: tests/ is on sys.path so modules import the shared oracles (tests/oracles.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
