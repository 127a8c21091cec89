"""Progress without a terminal: one plain line per N steps or per interval seconds on
stderr, with count, elapsed and ETA; -q silences it; the Python API stays silent. A fake clock:
no sleeps."""

from __future__ import annotations

import io
import re
import sys

from fairplace.core.progress import duration, progress_bar, progress_lines


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_one_line_per_n_steps_with_count_elapsed_and_eta(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    clock, out = Clock(), io.StringIO()
    with progress_lines(every=5, interval=1e9, clock=clock, stream=out):
        with progress_bar(20, "sweep") as bar:
            for _ in range(20):
                clock.t += 2.0
                bar.advance()
    lines = out.getvalue().splitlines()
    assert lines[0] == "sweep: 0/20 started"
    assert lines[1] == "sweep: 5/20 (25%), 10 s elapsed, ETA 30 s"
    assert lines[2] == "sweep: 10/20 (50%), 20 s elapsed, ETA 20 s"
    assert lines[-1] == "sweep: 20/20 (100%) done in 40 s"
    assert len(lines) == 5 and sys.stderr.getvalue() == ""  # its own stream only


def test_a_line_per_interval_when_steps_are_slow(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    clock, out = Clock(), io.StringIO()
    with progress_lines(interval=30.0, clock=clock, stream=out):  # every: a tenth of 1000
        with progress_bar(1000, "reproduce all") as bar:
            for step in (10.0, 10.0, 11.0, 5.0):  # 31 s after the start: one line
                clock.t += step
                bar.advance()
    lines = out.getvalue().splitlines()
    assert lines[1:] == [
        "reproduce all: 3/1000 (0%), 31 s elapsed, ETA 2 h 51 min",
        "reproduce all: stopped at 4/1000 after 36 s",
    ]


def test_nested_runs_print_their_own_labelled_lines(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    clock, out = Clock(), io.StringIO()
    with progress_lines(every=1, clock=clock, stream=out):
        with progress_bar(1, "reproduce pal") as outer:
            with progress_bar(2, "pal-synergy", outer) as inner:
                inner.advance(2)
            outer.advance()
    text = out.getvalue()
    assert "reproduce pal › pal-synergy: 2/2 (100%) done in 0 s" in text
    assert "reproduce pal: 1/1 (100%) done" in text and inner.shown


def test_silent_outside_the_cli_and_when_disabled(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar(3, "api") as bar:  # the Python API off a terminal: nothing
        bar.advance(3)
    with progress_lines(False), progress_bar(3, "quiet") as off:  # -q
        off.advance(3)
    with progress_lines(), progress_bar(3, "off", enabled=False) as no:  # --no-progress
        no.advance(3)
    assert sys.stderr.getvalue() == "" and not (bar.shown or off.shown or no.shown)


def test_duration_words():
    assert [duration(s) for s in (4.4, 97, 3725)] == ["4 s", "1 min 37 s", "1 h 02 min"]


def test_cli_sweep_prints_lines_off_a_terminal_and_q_silences_them(tmp_path, capsys):
    from fairplace.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(
        'name = "tiny"\nschedulers = ["fifo"]\nplacements = ["packed-sticky", "pal"]\n'
        'traces = ["workload-1"]\nseeds = [0]\n[fixed]\ngpus = 16\ngpus_per_machine = 4\n'
    )
    # 16 GPUs: each cell fails at once (a workload-1 job needs 24): fast, and still two cells
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r.parquet")]) == 1
    err = capsys.readouterr().err
    assert re.search(r"^tiny: 0/2 started$", err, re.M), err
    assert re.search(r"^tiny: 2/2 \(100%\) done in \d", err, re.M), err
    assert main(["sweep", str(spec), "--out", str(tmp_path / "q.parquet"), "-q"]) == 1
    assert "tiny: " not in capsys.readouterr().err
