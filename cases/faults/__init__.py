"""Fault-injection pairs: one known fault at a known depth, to prove layer localisation."""
