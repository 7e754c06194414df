"""Benchmarks: run as modules from the repository root, e.g. ``.venv/bin/python -m bench.vector_speed``."""
