# The two README commands. Both set up everything from nothing (idempotent) first.
.PHONY: setup demo test bench
PY := .venv/bin/python

setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m puffer demo

test: setup
	$(PY) -m pytest -q -p no:cacheprovider tests

bench: setup
	$(PY) bench/run.py
