"""Adapters: concrete implementations of the domain's ports (store, sources, indexes, ...)."""
