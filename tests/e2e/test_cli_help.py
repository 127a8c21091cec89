"""The CLI as a user meets it: help text for every option, registry-derived choices, --json on every
command that prints data, custom instances, and the example sweep spec."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import fairplace
from fairplace.cli import build_parser, main
from fairplace.sim import SCHEDULERS
from fairplace.solvers.placement.policies import POLICY_NAMES
from fairplace.solvers.registry import solver_table

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sweep-pal-vs-load.toml"


def _options(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_option_has_help_text():
    missing = [
        (" ".join(path), action.option_strings or action.dest)
        for path, action in _options(build_parser())
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == []


def test_help_lists_registry_choices(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's line wrapping
    for name in (*SCHEDULERS, *POLICY_NAMES):
        assert name in text
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in solver_table())


def test_top_level_help_describes_the_tool(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "THEMIS" in out and "PAL" in out and "reproduce" in out


def test_unknown_name_exits_2_listing_the_known_ones(capsys):
    assert main(["simulate", "--trace", "workload-1", "--placement", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "pm-first" in err and len(err.strip().splitlines()) == 1
    assert main(["instances", "generate", "--kind", "nope", "-o", "x.json"]) == 2
    assert "--kind" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["auction", "placement", "agent-auction"])
def test_generate_a_custom_instance(tmp_path, capsys, kind):
    out = tmp_path / "sub" / "x.json"
    argv = ["instances", "generate", "--kind", kind, "--apps", "3", "--machines", "2"]
    assert main([*argv, "--seed", "1", "-o", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"kind": kind, "path": str(out)}
    inst = fairplace.load(out)  # validated by the published schema on load
    assert inst.kind == ("placement" if kind == "placement" else "auction")
    assert len(inst.cluster.gpus) == 8
    again = tmp_path / "y.json"
    assert main([*argv, "--seed", "1", "-o", str(again)]) == 0
    assert again.read_text() == out.read_text()  # same seed, same instance


def test_generate_needs_a_suite_or_a_kind(tmp_path, capsys):
    assert main(["instances", "generate", "-o", str(tmp_path)]) == 2
    assert "SUITE" in capsys.readouterr().err
    args = ["instances", "generate", "--kind", "auction", "--apps", "0", "-o", str(tmp_path / "x")]
    assert main(args) == 2
    assert "--apps" in capsys.readouterr().err


def test_json_output_of_listing_commands(tmp_path, capsys):
    assert main(["instances", "list", "--json"]) == 0
    suites = json.loads(capsys.readouterr().out)
    assert {"suite", "instances", "description"} <= set(suites[0])
    assert main(["schema", "placement", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["properties"]["kind"] == {"const": "placement"}
    assert main(["instances", "generate", "small", "-o", str(tmp_path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["paths"]) == len(list(tmp_path.glob("*.json")))


def test_example_sweep_spec_validates(capsys):
    assert main(["sweep", str(EXAMPLE), "--validate-only", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "pal-vs-load", "cells": 48}


@pytest.mark.slow
def test_example_sweep_spec_runs_for_real(tmp_path, capsys):
    """The example spec, cut to two load levels, one seed and 12 jobs, through the real simulator
    (a few seconds); `fairplace plot` draws the figures the README promises, load ones included."""
    text = EXAMPLE.read_text().replace(
        "jobs_per_hour = [2.0, 4.0, 8.0, 16.0]", "jobs_per_hour = [4.0, 16.0]"
    )
    assert text != EXAMPLE.read_text()
    spec = tmp_path / "tiny.toml"
    spec.write_text(
        text.replace("n_jobs = 100", "n_jobs = 12").replace("seeds = [0, 1, 2]", "seeds = [0]")
    )
    out = tmp_path / "r.parquet"
    assert main(["sweep", str(spec), "--out", str(out), "--no-progress", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 8 and doc["failed"] == 0 and Path(doc["paths"]["jsonl"]).exists()
    assert main(["plot", str(out), "--out", str(tmp_path / "plots"), "--json"]) == 0
    plotted = json.loads(capsys.readouterr().out)
    assert plotted["kind"] == "sweep" and all(Path(f).exists() for f in plotted["files"])
    drawn = {Path(f).stem for f in plotted["files"]}
    assert {"jct-vs-load", "jct-normalised", "gpu-time"} <= drawn
