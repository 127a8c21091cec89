"""The run commands' own flags and the strategy-proofness experiment's parameters are
:class:`~fairplace.core.params.Param`\\s (issue 50 item 2): ``--workers`` (batch, sweep,
reproduce), ``--no-workers-timeout`` (batch) and ``--timeout`` (bench) are checked and documented
by their specs on the command line (exit 2 naming the flag) and again by the library functions
(``run_batch``, ``run_sweep``, ``reproduce``), before any Dask cluster starts;
:class:`~fairplace.runs.strategyproofness.Setup` and
:func:`~fairplace.runs.strategyproofness.strategyproofness` reject each value their specs call
invalid, naming the parameter, before any simulation runs."""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest

from fairplace.cli import UsageError, build_parser, main
from fairplace.commands.bench import TIMEOUT
from fairplace.core.errors import OptionError
from fairplace.runs import strategyproofness as sp
from fairplace.runs.params import BATCH_WORKERS, NO_WORKERS_TIMEOUT, WORKERS

#: (command, its other arguments, spec)
FLAGS = [
    ("batch", ["small"], BATCH_WORKERS),
    ("batch", ["small"], NO_WORKERS_TIMEOUT),
    ("sweep", ["spec.toml"], WORKERS),
    ("reproduce", [], WORKERS),
    ("bench", [], TIMEOUT),
]


def _action(command: str, flag: str) -> argparse.Action:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return next(a for a in sub.choices[command]._actions if flag in a.option_strings)


@pytest.mark.parametrize(
    ("command", "argv", "spec"), FLAGS, ids=[f"{c}-{s.flag}" for c, _, s in FLAGS]
)
def test_a_run_flag_is_its_spec(command, argv, spec):
    action = _action(command, spec.flag)
    assert action.default in (spec.default, None) and action.help.startswith(spec.help())
    parser = build_parser(only=command)
    assert getattr(parser.parse_args([command, *argv]), spec.name) in (spec.default, None)
    for value in spec.invalid_values():
        with pytest.raises(UsageError) as exc:
            parser.parse_args([command, *argv, spec.flag, str(value)])
        assert f"argument {spec.flag}: " in exc.value.message, value


def test_a_bad_workers_value_exits_2_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as exc:  # argparse's exit
        main(["batch", "small", "--workers", "2.0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("fairplace batch: error: --workers: must be an integer in [1, 256]")


def test_the_library_checks_the_same_specs_before_any_cluster_starts(tmp_path):
    from fairplace.runs.batch import run_batch
    from fairplace.runs.reproduce import reproduce
    from fairplace.runs.sweep import run_sweep

    spec = {"schedulers": ["fifo"], "placements": ["pal"], "traces": ["workload-1"]}
    for value in BATCH_WORKERS.invalid_values():
        with pytest.raises(OptionError) as exc:
            run_batch("small", workers=value, out=tmp_path / "b.csv", progress=False)
        assert exc.value.path == "--workers", value
    for value in NO_WORKERS_TIMEOUT.invalid_values():
        with pytest.raises(OptionError) as exc:
            run_batch("small", no_workers_timeout=value, out=tmp_path / "b.csv", progress=False)
        assert exc.value.path == "--no-workers-timeout", value
    for value in WORKERS.invalid_values():
        with pytest.raises(OptionError) as exc:
            run_sweep(spec, tmp_path / "s.csv", workers=value, progress=False)
        assert exc.value.path == "--workers", value
        with pytest.raises(OptionError) as exc:  # before any experiment runs
            reproduce("themis", "tiny", out=tmp_path / "r", workers=value, progress=False)
        assert exc.value.path == "--workers", value
    assert not list(tmp_path.iterdir())  # nothing written


def test_every_setup_field_is_a_spec_with_its_default():
    assert [f.name for f in fields(sp.Setup)] == [p.name for p in sp.SETUP_PARAMS]
    setup = sp.Setup()
    for spec in sp.SETUP_PARAMS:
        assert getattr(setup, spec.name) == spec.default and spec.doc, spec.name


@pytest.mark.parametrize("spec", sp.SETUP_PARAMS, ids=[p.name for p in sp.SETUP_PARAMS])
def test_the_experiment_rejects_each_invalid_parameter_naming_it(spec):
    for value in spec.invalid_values():
        with pytest.raises(OptionError) as exc:
            sp.Setup(**{spec.name: value})
        assert exc.value.path == spec.name, value
        with pytest.raises(OptionError) as exc:  # the experiment spec's keys, before any run
            sp.strategyproofness(xs=[0], seeds=[0], **{spec.name: value})
        assert exc.value.path == spec.name, value


def test_the_experiment_rejects_each_invalid_x_seed_and_quick():
    for spec, key in ((sp.MISREPORT, "xs"), (sp.SEEDS, "seeds")):
        other = {"seeds": [0]} if key == "xs" else {"xs": [0]}
        for value in spec.invalid_values():
            with pytest.raises(OptionError) as exc:
                sp.strategyproofness(**{key: [0, value]}, **other)
            assert exc.value.path == f"{key}[1]", value
        with pytest.raises(OptionError) as exc:
            sp.strategyproofness(**{key: 5}, **other)
        assert exc.value.path == key
    for value in sp.QUICK.invalid_values():
        with pytest.raises(OptionError) as exc:
            sp.strategyproofness(xs=[0], seeds=[0], quick=value)
        assert exc.value.path == "quick", value


def test_plot_kind_is_a_spec_of_the_figure_kinds():
    from fairplace.analysis.auto import FIGURES

    action = _action("plot", "--kind")
    assert all(action.type(kind) == kind for kind in FIGURES) and "apps" in action.help
    for text in ("", "nope", "Sweep"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected one of"):
            action.type(text)
