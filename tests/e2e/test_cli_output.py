"""CLI output conventions: every command takes -q/--quiet and -v/--verbose (status lines through
logging on stderr), and its tables come from tabulate."""

from __future__ import annotations

import logging

import pytest

from fairplace import cli


@pytest.mark.parametrize("command", cli.COMMANDS)
def test_every_command_takes_quiet_and_verbose(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "-q, --quiet" in text and "-v, --verbose" in text
    with pytest.raises(SystemExit) as exc:  # one or the other
        cli.main([command, "-q", "-v"])
    assert exc.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_sub_commands_take_them_too_before_or_after(capsys):
    for argv in (["instances", "-q", "list"], ["instances", "list", "--quiet"]):
        assert cli.main(argv) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[0].split() == ["suite", "instances", "description"]


def test_verbose_shows_how_a_batch_runs_and_quiet_hides_status_lines(tmp_path, capsys):
    logger = logging.getLogger("fairplace")
    before = (list(logger.handlers), logger.level, logger.propagate)
    argv = ["batch", "small", "--solvers", "greedy-rho", "--workers", "1", "--overwrite"]
    assert cli.main([*argv, "--out", str(tmp_path / "a.csv"), "-v"]) == 0
    err = capsys.readouterr().err
    assert "batch: 24 task(s) (0 journaled before); in-process: --workers 1" in err
    assert cli.main([*argv, "--out", str(tmp_path / "b.csv")]) == 0
    out, err = capsys.readouterr()
    # no debug lines by default; off a terminal, only the plain progress lines (long work says
    # what it is doing), which -q silences
    assert err and all(ln.startswith("solving: ") for ln in err.splitlines())
    assert cli.main([*argv, "--out", str(tmp_path / "c.csv"), "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert out.splitlines()[0].split()[:3] == ["solver", "status", "rows"]  # a tabulate table
    assert (list(logger.handlers), logger.level, logger.propagate) == before  # nothing leaks


def test_quiet_keeps_warnings(tmp_path, capsys):
    out = tmp_path / "r.csv"
    argv = ["batch", "small", "--solvers", "greedy-rho", "--workers", "1", "--out", str(out)]
    assert cli.main(argv) == 0
    capsys.readouterr()  # the first run's progress lines
    with open(f"{out}.jsonl", "a") as fh:
        fh.write("[1, 2]\n")  # a damaged journal line: reported as a warning
    assert cli.main([*argv, "--resume", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "skipped 1 unreadable line(s)" in err
