"""Experiment specs and claims of the two papers (THEMIS, PAL)."""

#: one folder each (``claims.toml`` and the experiment specs); ``fairplace reproduce``'s choices
PAPERS = ("themis", "pal")
