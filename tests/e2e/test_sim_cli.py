"""``fairplace simulate``: JSON summary on stdout, parquet output, exit 2 on bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fairplace.cli import main


def test_simulate_json_summary_and_out_dir(tmp_path, capsys):
    out = tmp_path / "res"
    rc = main(
        ["simulate", "--trace", "workload-4", "--scheduler", "fifo", "--placement", "pal",
         "--gpus", "64", "--gpus-per-machine", "4", "--profile", "longhorn",
         "--locality-penalty", "1.7", "--round", "300", "--seed", "0", "--out", str(out), "--json"]
    )  # fmt: skip
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)  # stdout is pure JSON
    for k in ("avg_jct", "p99_jct", "makespan", "utilization", "max_rho", "median_rho"):
        assert isinstance(summary[k], float)
    assert len(pd.read_parquet(out / "jobs.parquet")) == 160
    assert not pd.read_parquet(out / "rounds.parquet").empty
    assert (
        json.loads((out / "summary.json").read_text())["summary"]["avg_jct"] == summary["avg_jct"]
    )


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            ["--trace", "nope"],
            "unknown trace 'nope': use workload-1, workload-2, workload-3, workload-4, workload-5, workload-6, workload-7, workload-8, themis-1, themis-2, synergy or a .csv file",
        ),
        (["--trace", "workload-1", "--scheduler", "nope"], "--scheduler"),
        (["--trace", "workload-1", "--placement", "nope"], "placement"),
        (["--trace", "workload-1", "--gpus", "30"], "--gpus"),
        (["--trace", "workload-1", "--profile", "nope"], "--profile"),
        (["--trace", "workload-1", "--locality-penalty", "0.5"], "--locality-penalty"),
        (["--trace", "workload-1", "--round", "-1"], "--round"),
        (["--trace", "workload-1", "--gpus", "16"], "num_gpus"),
        (["--trace", "workload-1", "--classes", "nope"], "--classes"),
        (["--trace", "workload-1", "--locality-model", "nope"], "--locality-model"),
        (["--trace", "workload-1", "--binning", "nope"], "binning"),
        (["--trace", "workload-1", "--placement-option", "bogus"], "--placement-option"),
        (["--trace", "workload-1", "--placement-option", "ties=x"], "ties"),
        (
            [
                "--trace",
                "workload-1",
                "--placement",
                "pm-first",
                "--placement-option",
                "ties=artifact",
            ],
            "ties",
        ),
    ],
)
def test_bad_options_exit_2_with_one_line(args, needle, capsys):
    assert main(["simulate", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def test_bad_csv_exits_2_naming_row_and_column(tmp_path, capsys):
    p = tmp_path / "bad.csv"
    p.write_text("job_id,num_gpus,submit_time,duration,model\n0,2,0,10,vgg19\n1,x,1,10,BERT\n")
    assert main(["simulate", "--trace", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert "row 2" in err and "num_gpus" in err


def test_csv_trace_runs(tmp_path, capsys):
    p = tmp_path / "ok.csv"
    p.write_text("job_id,num_gpus,submit_time,duration,model\n0,2,0,100,vgg19\n1,4,30,50,BERT\n")
    assert main(["simulate", "--trace", str(p), "--placement", "pm-first", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 2
