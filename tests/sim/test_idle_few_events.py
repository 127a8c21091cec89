"""The idle-while-waiting integral over few events (a Python walk) against the array path."""

import numpy as np
import pytest

from fairplace.sim import accounting


@pytest.mark.parametrize("seed", range(40))
def test_few_events_walk_equals_the_array_path(seed, monkeypatch):
    """Ties in time, events before t (clipped), demand below zero: both paths give one number."""
    rng = np.random.default_rng(seed)
    nf, na = int(rng.integers(0, 10)), int(rng.integers(1, 10))
    t = float(rng.uniform(0, 1e4))
    t1 = t + float(rng.uniform(1, 600))
    grid = rng.uniform(t - 10, t1, 4)  # repeated times: the sort must be stable
    args = (
        t, t1, float(rng.integers(0, 40)), float(rng.integers(-4, 40)),
        rng.choice(grid, nf), rng.integers(1, 9, nf).astype(float),
        rng.integers(0, 9, nf).astype(float), rng.choice(grid, na),
        rng.integers(1, 9, na).astype(float),
    )  # fmt: skip
    walk = accounting.idle_while_waiting(*args)
    monkeypatch.setattr(accounting, "_FEW_EVENTS", -1)  # every call takes the array path
    assert walk == pytest.approx(accounting.idle_while_waiting(*args), rel=1e-12, abs=1e-9)
