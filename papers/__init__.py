"""Experiment specs and claims of the two papers (THEMIS, PAL)."""
