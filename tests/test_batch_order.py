"""Batch scheduling: largest-first submission order and in-process solving of small suites."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.instances import suites
from fairplace.runs.batch import _size_hint, largest_first, run_batch


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=0, max_size=12))
def test_largest_first_is_a_stable_sort_by_size(sizes):
    todo = [(f"i{k}", "exact", {"pad": "x" * n}) for k, n in enumerate(sizes)]
    out = largest_first(todo)
    assert sorted(out) == sorted(todo)  # a permutation
    hints = [_size_hint(p) for _, _, p in out]
    assert hints == sorted(hints, reverse=True)
    for a, b in zip(out, out[1:], strict=False):  # equal sizes keep the suite's order
        if _size_hint(a[2]) == _size_hint(b[2]):
            assert int(a[0][1:]) < int(b[0][1:])


def test_small_suite_is_solved_in_process_with_the_workers_rows(tmp_path):
    items = suites.suite_items("small")[:3]
    df = run_batch(items, solvers=["exact"], workers=2, out=tmp_path / "r.jsonl", progress=False)
    assert list(df["instance"]) == sorted(n for n, _ in items)
    for name, payload in items:
        row = df[df["instance"] == name].iloc[0]
        ref = fairplace.solve(suites.load_item(payload), "exact", threads=1, parallel=False)
        assert row["status"] == ref.status
        assert abs(row["objective"] - ref.objective) < 1e-9


def test_unbinned_policy_solve_does_not_import_scikit_learn():
    # `seconds` of a policy solve covers the placement only: the scikit-learn import (seconds, once
    # per process) happens only for binned scores, and then before the timed region
    import subprocess
    import sys

    code = (
        "import sys, fairplace\n"
        "from fairplace.instances import suites\n"
        "p = dict(suites.suite_items('small'))['small-12-placement']\n"
        "fairplace.solve(suites.load_item(p), solver='pal')\n"
        "print('sklearn' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
