"""`fairplace sweep`: spec validation (exit 2 naming the key), grid, appended rows, resume."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from fairplace.cli import main
from fairplace.core.errors import OptionError
from fairplace.runs.sweep import load_spec, results_paths, run_sweep

SPEC = {
    "name": "t",
    "schedulers": ["fifo"],
    "placements": ["pal", "packed-sticky"],
    "traces": ["workload-1"],
    "seeds": [0, 1],
    "params": {"locality_penalty": [1.0, 3.0]},
    "fixed": {"gpus": 16},
    "frames": ["jobs"],
}


def fake(trace, scheduler, placement, seed, locality_penalty, gpus):
    if placement == "packed-sticky" and seed == 1:
        raise ValueError("boom")
    jobs = pd.DataFrame({"job": [0, 1], "jct": [1.0, 2.0]})
    return SimpleNamespace(summary={"avg_jct": locality_penalty * (seed + 1)}, jobs=jobs)


def test_grid_and_rows(tmp_path):
    spec = load_spec(SPEC, check_names=False)
    assert len(spec) == len(spec.cells()) == 8
    df = run_sweep(spec, tmp_path / "r.parquet", progress=False, simulate=fake)
    assert len(df) == 8 and (df["status"] == "error").sum() == 2
    assert df.loc[df["status"] == "error", "message"].str.contains("boom").all()
    ok = df[df["status"] == "ok"]
    assert set(ok["avg_jct"]) == {1.0, 2.0, 3.0, 6.0}
    paths = results_paths(tmp_path / "r.parquet")
    assert paths["csv"].exists() and paths["parquet"].exists()
    jobs = pd.read_parquet(paths["jobs.parquet"])
    assert len(jobs) == 2 * 6 and {"placement", "seed", "locality_penalty"} <= set(jobs)


def test_resume_skips_finished_cells(tmp_path):
    calls = []

    def counting(**kw):
        calls.append(kw)
        return SimpleNamespace(summary={"avg_jct": 1.0})

    spec = load_spec(SPEC | {"frames": []}, check_names=False)
    run_sweep(spec, tmp_path / "r", progress=False, simulate=counting)
    journal = results_paths(tmp_path / "r")["jsonl"]
    lines = journal.read_text().splitlines(keepends=True)
    assert len(lines) == 8  # one JSON line per finished cell (the batch journal's format)
    journal.write_text("".join(lines[:3]) + lines[3][:20])  # killed while writing the 4th row
    calls.clear()
    df = run_sweep(spec, tmp_path / "r", progress=False, simulate=counting, resume=True)
    assert len(calls) == 5 and len(df) == 8 and df["cell_id"].is_unique
    assert len(pd.read_csv(tmp_path / "r.csv")) == 8


def test_resume_runs_again_what_ran_under_other_fixed_arguments(tmp_path, caplog):
    calls = []

    def counting(**kw):
        calls.append(kw)
        return SimpleNamespace(summary={"avg_jct": float(kw["gpus"])})

    base = SPEC | {"frames": []}
    run_sweep(load_spec(base, check_names=False), tmp_path / "r", progress=False, simulate=counting)
    journal = results_paths(tmp_path / "r")["jsonl"]
    calls.clear()
    other = load_spec(base | {"fixed": {"gpus": 32}}, check_names=False)
    df = run_sweep(other, tmp_path / "r", progress=False, simulate=counting, resume=True)
    assert len(calls) == 8 and set(df["avg_jct"]) == {32.0}  # none of the gpus=16 rows kept
    assert "8 journaled cell(s) ran with other [fixed] arguments" in caplog.text
    calls.clear()
    run_sweep(other, tmp_path / "r", progress=False, simulate=counting, resume=True)
    assert calls == []  # same arguments: nothing to run
    # a journal written before rows carried the key (nor a checksum): its rows are trusted
    old = ("fixed_key", "row_sha256")
    lines = journal.read_text().splitlines()
    journal.write_text("".join(
        json.dumps({k: v for k, v in json.loads(x).items() if k not in old}) + "\n" for x in lines
    ))  # fmt: skip
    run_sweep(load_spec(base, check_names=False), tmp_path / "r", progress=False,
              simulate=counting, resume=True)  # fmt: skip
    assert calls == []


def test_resume_keeps_frames_of_finished_cells_once(tmp_path):
    spec = load_spec(SPEC, check_names=False)
    run_sweep(spec, tmp_path / "r", progress=False, simulate=fake)
    paths = results_paths(tmp_path / "r")
    rows = paths["jsonl"].read_text().splitlines(keepends=True)
    paths["jsonl"].write_text("".join(rows[:2]))  # the frames of later cells are orphans now
    df = run_sweep(spec, tmp_path / "r", progress=False, simulate=fake, resume=True)
    assert len(df) == 8
    jobs = pd.read_parquet(paths["jobs.parquet"])
    assert len(jobs) == 2 * 6  # each ok cell's frame once, not once per run


@pytest.mark.parametrize(
    "bad,key",
    [
        ({"bogus": 1}, "bogus"),
        ({"schedulers": []}, "schedulers"),
        ({"placements": ["nowhere"]}, "placements"),
        ({"seeds": ["a"]}, "seeds"),
        ({"params": {"locality_penalty": 2.0}}, "params.locality_penalty"),
        ({"params": {"seed": [1]}}, "params.seed"),
        ({"frames": ["nope"]}, "frames"),
    ],
)
def test_bad_spec_names_the_key(bad, key):
    with pytest.raises(OptionError) as e:
        load_spec(SPEC | bad)
    assert e.value.path == key


def test_cli_exit_2_on_bad_spec(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(
        'name = "x"\nschedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["w"]\nfoo = 1\n'
    )
    assert main(["sweep", str(f)]) == 2
    assert "foo" in capsys.readouterr().err
    f.write_text("not = [valid")
    assert main(["sweep", str(f)]) == 2
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    f.write_text('schedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["w"]\n')
    assert main(["sweep", str(f), "--validate-only"]) == 2  # no trace named "w"
    err = capsys.readouterr().err
    assert "traces[0]" in err and "themis-1" in err  # the generated names are listed too
    f.write_text('schedulers = ["fifo"]\nplacements = ["pal"]\ntraces = ["workload-1"]\n')
    assert main(["sweep", str(f), "--validate-only"]) == 0
