"""Speed-ups change no result: every policy's picks and every simulation (summary, per-job JCTs,
decisions) equal the references recorded before the incremental engine (``tests/speedup_cases.py``;
integers and ids exactly, floats to ``sc.RTOL``). Here on the Python path (the reference);
tests/solvers/test_round_kernel.py checks the same references through the compiled kernel."""

from __future__ import annotations

import pytest
import speedup_cases as sc

REF = sc.load_reference()


@pytest.fixture(autouse=True)
def _python_path(monkeypatch):
    monkeypatch.setenv("FAIRPLACE_KERNEL", "python")


@pytest.mark.parametrize("args", sc.placement_params(), ids=lambda a: sc.placement_key(*a))
def test_policy_picks_match_reference(args):
    key = sc.placement_key(*args)
    sc.assert_matches(sc.placement_case(*args), REF["placement"][key], key)


@pytest.mark.parametrize("args", sc.SIMULATIONS, ids=lambda a: sc.simulation_key(*a))
def test_simulation_matches_reference(args):
    key = sc.simulation_key(*args)
    sc.assert_matches(sc.simulation_case(*args), REF["simulation"][key], key)


def test_reference_comparison_is_exact_for_ints_and_tolerant_for_floats():
    """The comparison itself: last-bit float noise passes, a changed pick or count does not."""
    want = {"jct": [100.0, 2.5e4], "placed": 3, "allocation": {"7": [0, 1]}}
    noisy = {"jct": [100.0 * (1 + 1e-12), 2.5e4 - 1e-9], "placed": 3, "allocation": {"7": [0, 1]}}
    assert sc.mismatches(noisy, want) == []
    assert sc.mismatches({**noisy, "jct": [100.01, 2.5e4]}, want) == [
        ".jct[0]: 100.01 != 100.0 (rtol 1e-09)"
    ]
    assert sc.mismatches({**noisy, "allocation": {"7": [0, 2]}}, want) == [
        ".allocation.7[1]: 2 != 1"
    ]
    assert sc.mismatches({**noisy, "placed": 3.0}, want) == [".placed: 3.0 != 3"]
    assert sc.mismatches({**noisy, "allocation": {"8": [0, 1]}}, want)
