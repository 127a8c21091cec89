"""The isolated re-run T_id variant: each app re-simulated alone on the same cluster."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fairplace.cli import main
from fairplace.sim import simulate


def trace(rows):
    return pd.DataFrame(rows, columns=["job_id", "num_gpus", "submit_time", "duration", "model"])


def test_uncontended_apps_have_rho_one_and_queued_ones_more():
    # 8 GPUs: job a (8 GPUs) runs alone first; b (8 GPUs) arrives while a runs and must wait;
    # c arrives long after both finished and runs exactly as it would alone
    t = trace(
        [["a", 8, 0, 4000, "vgg19"], ["b", 8, 10, 4000, "vgg19"], ["c", 4, 90000, 100, "BERT"]]
    )
    r = simulate(t, "fifo", "packed-sticky", gpus=8, isolated=True, progress=False)
    rho = dict(zip(r.jobs.job_id, r.jobs.rho_isolated, strict=True))
    assert np.isclose(rho["a"], 1.0) and np.isclose(rho["c"], 1.0)
    assert rho["b"] > 1.5  # waited for a's whole run
    assert r.summary["max_rho_isolated"] == max(rho.values())
    assert "rho_isolated" not in simulate(t, "fifo", "packed-sticky", gpus=8, progress=False).jobs


def test_rho_variant_isolated_drives_the_summary_and_is_deterministic():
    a = simulate("workload-1", "fifo", "pal", rho_variant="isolated", progress=False)
    b = simulate("workload-1", "fifo", "pal", rho_variant="isolated", progress=False)
    assert a.summary["max_rho"] == a.summary["max_rho_isolated"] == b.summary["max_rho"]
    assert (a.jobs.rho_isolated >= 1.0 - 1e-9).mean() > 0.95  # sharing rarely beats running alone


def test_cli_rho_variant(capsys):
    assert main(["simulate", "--trace", "workload-1", "--rho-variant", "isolated", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rho_variant"] == "isolated" and out["max_rho"] == out["max_rho_isolated"]
    assert main(["simulate", "--trace", "workload-1", "--rho-variant", "nope"]) == 2
    assert "--rho-variant" in capsys.readouterr().err
