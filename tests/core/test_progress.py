"""The one progress-bar helper: rich on stderr, only on a terminal, nested runs share a display."""

from __future__ import annotations

import io
import sys

from fairplace.core.progress import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_hidden_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar(3, "cells") as bar:
        bar.advance(3)
    assert not bar.shown and sys.stderr.getvalue() == ""


def test_shown_on_a_terminal_unless_disabled(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with progress_bar(2, "disabled", enabled=False) as off:
        off.advance()
    assert not off.shown and sys.stderr.getvalue() == ""
    with progress_bar(2, "cells-bar") as bar:
        bar.advance(2)
    assert bar.shown and "cells-bar" in sys.stderr.getvalue()


def test_nested_bar_joins_the_outer_display(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with progress_bar(1, "outer-bar") as outer:
        with progress_bar(
            4, "inner-bar", outer
        ) as inner:  # no second live display (rich forbids it)
            inner.advance(4)
        outer.advance()
    assert inner.shown and "inner-bar" in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar(1, "outer") as hidden, progress_bar(1, "inner", hidden) as child:
        child.advance()
    assert not child.shown
