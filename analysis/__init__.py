"""Metrics, tables, seaborn plots and reports; reads results, never recomputes them."""
