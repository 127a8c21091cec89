"""Speed-ups change no result: every policy's picks and every simulation digest equal the
references recorded before the incremental engine (``tests/speedup_cases.py``). Here on the Python
path (the reference); tests/test_round_kernel.py checks the same references through the compiled
kernel."""

from __future__ import annotations

import json

import pytest
import speedup_cases as sc

REF = json.loads(sc.REFERENCE.read_text())


@pytest.fixture(autouse=True)
def _python_path(monkeypatch):
    monkeypatch.setenv("FAIRPLACE_KERNEL", "python")


@pytest.mark.parametrize("args", sc.placement_params(), ids=lambda a: sc.placement_key(*a))
def test_policy_picks_match_reference(args):
    assert sc.placement_case(*args) == REF["placement"][sc.placement_key(*args)]


@pytest.mark.parametrize("args", sc.SIMULATIONS, ids=lambda a: sc.simulation_key(*a))
def test_simulation_matches_reference(args):
    assert sc.simulation_case(*args) == REF["simulation"][sc.simulation_key(*args)]
