"""Profile names accepted by ``fairplace.simulate`` / ``--profile``."""

from __future__ import annotations

import pytest

from fairplace.core.errors import DataError
from fairplace.instances.variability import PROFILE_NAMES, make_cluster


def test_longhorn_runs_keeps_the_slow_tail_that_per_gpu_medians_remove():
    runs = make_cluster("longhorn-runs", 16, 4, seed=0).pm_vector("A").max()
    medians = make_cluster("longhorn", 16, 4, seed=0).pm_vector("A").max()
    assert "longhorn-runs" in PROFILE_NAMES
    assert medians < 1.2 < runs


def test_unknown_profile_is_a_data_error():
    with pytest.raises(DataError, match="unknown variability profile"):
        make_cluster("summit", 2, 4)
