"""One BLAS thread under fairplace's own parallelism (``core/blas.py``)."""

import numpy as np
from threadpoolctl import threadpool_info

from fairplace.core.blas import one_blas_thread


def _blas_threads() -> set[int]:
    return {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}


def test_one_blas_thread_limits_and_restores():
    np.ones(10) @ np.ones(10)  # numpy's BLAS is loaded
    before = _blas_threads()
    with one_blas_thread():
        assert _blas_threads() == {1}
    assert _blas_threads() == before


def test_compact_payments_run_on_one_blas_thread(monkeypatch):
    """The leave-one-out solves (2 threads) see one BLAS thread, whatever the process had."""
    from fairplace.instances.generators import random_agent_auction
    from fairplace.solvers.compact import CompactAuctionOptions, solve_compact_auction
    from fairplace.solvers.compact import pa_payments as compact_pa

    seen = []
    run = compact_pa.leave_one_out

    def spy(*a, **k):
        seen.append(_blas_threads())
        return run(*a, **k)

    monkeypatch.setattr(compact_pa, "leave_one_out", spy)
    inst = random_agent_auction(apps=12, machines=8, machines_per_rack=4)
    sol = solve_compact_auction(inst, config=CompactAuctionOptions(enum_limit=0))  # LP / MILP
    assert sol.status == "optimal" and seen and all(s == {1} for s in seen)
