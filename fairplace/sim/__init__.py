"""Trace-driven cluster simulation (the round driver)."""
