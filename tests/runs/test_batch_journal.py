"""The batch journal: a crash at any byte keeps every complete row and nothing else."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.runs.batch import _append, _repair, journal_path, read_journal

rows_st = st.lists(
    st.fixed_dictionaries(
        {
            "instance": st.text(min_size=1, max_size=8),
            "solver": st.sampled_from(["exact", "pal", "greedy-rho"]),
            "objective": st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
            "message": st.text(max_size=20),
        }
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None)
@given(rows=rows_st, cut=st.floats(0, 1), last_newline=st.booleans())
def test_torn_journal_keeps_exactly_the_complete_rows(tmp_path_factory, rows, cut, last_newline):
    path = tmp_path_factory.mktemp("j") / "r.jsonl"
    with open(path, "a") as f:
        for r in rows:
            _append(f, r)
    data = path.read_bytes()
    n = len(data) - 1 if last_newline else int(cut * len(data))  # -1: only the newline is lost
    path.write_bytes(data[:n])  # a crash after n bytes
    complete = data[:n].count(b"\n")
    assert read_journal(path) == rows[:complete]
    _repair(path)
    with open(path, "a") as f:  # resuming appends on a fresh line
        _append(f, rows[0])
    assert read_journal(path) == [*rows[:complete], rows[0]]


def test_journal_path():
    assert journal_path("out/r.parquet").name == "r.parquet.jsonl"
    assert journal_path("out/r.jsonl").name == "r.jsonl"
