"""Size limits of inputs read (``core/limits.py`` :class:`SizeLimit`): file bytes,
apps, bids per app, jobs, GPUs and CSV rows are checked before the work they would blow up, and
the error names the limit and the environment variable that raises it (exit 2)."""

from __future__ import annotations

import re
import time
import warnings

import pandas as pd
import pytest

from fairplace import cli
from fairplace.core.errors import InstanceError, OptionError, TraceError
from fairplace.core.limits import (
    APPS,
    BIDS_PER_APP,
    CSV_BYTES,
    JOBS,
    JSON_BYTES,
    MAX_GPUS,
    SIZE_LIMITS,
    TRACE_ROWS,
    check_instance_sizes,
)
from fairplace.instances import io
from fairplace.instances.generators import random_auction
from fairplace.instances.traces import load_trace, validate_trace

BID = '{"gpus": ["g0", "g1"], "rho": 1.5}'
HEADER = "job_id,num_gpus,submit_time,duration,model\n"


def _auction_text(bids: int) -> str:
    """One app with ``bids`` identical bids on a 2-GPU cluster (built as text: fast at any size)."""
    gpus = '[{"id": "g0", "machine": "m0"}, {"id": "g1", "machine": "m0"}]'
    table = ", ".join([BID] * bids)
    return f'{{"kind": "auction", "gpus": {gpus}, "apps": [{{"id": "a", "bids": [{table}]}}]}}'


@pytest.fixture
def no_parse(monkeypatch):
    """Fail the test if an instance document is parsed (the limit must come first)."""

    def parse(*a, **k):
        raise AssertionError("the document was parsed")

    monkeypatch.setattr(io.json, "loads", parse)


def test_the_50mb_instance_exits_2_before_it_is_parsed(tmp_path, capsys, no_parse):
    """The audit's instance (one app, 1.3 M bids, ~47 MB) at the default limit: exit 2 naming
    FAIRPLACE_MAX_JSON_BYTES, without reading the document (it took 273 s and 1 GB)."""
    path = tmp_path / "big.json"
    path.write_text(_auction_text(1_300_000))
    assert path.stat().st_size > JSON_BYTES.default
    t0 = time.perf_counter()
    assert cli.main(["solve", str(path), "--time-limit", "5"]) == 2
    seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert "big.json" in err and "bytes exceed the limit of 33,554,432 bytes" in err
    assert "FAIRPLACE_MAX_JSON_BYTES" in err and len(err.strip().splitlines()) == 1
    print(f"50 MB instance: exit 2 after {seconds:.3f} s")


def test_the_byte_limit_is_raised_and_lowered_by_its_variable(tmp_path, monkeypatch):
    path = tmp_path / "small.json"
    io.save(random_auction(apps=2, bids_per_app=3, machines=1, gpus_per_machine=2, seed=0), path)
    size = path.stat().st_size
    monkeypatch.setenv("FAIRPLACE_MAX_JSON_BYTES", str(size - 1))
    with pytest.raises(InstanceError, match=f"{size:,} bytes exceed the limit of {size - 1:,}"):
        io.load(path)
    with pytest.raises(InstanceError, match="FAIRPLACE_MAX_JSON_BYTES"):  # text given directly
        io.loads(path.read_text())
    monkeypatch.setenv("FAIRPLACE_MAX_JSON_BYTES", str(size))
    assert len(io.load(path).apps) == 2


def test_bids_per_app_are_counted_before_the_schema(tmp_path, monkeypatch, capsys):
    """Under the byte limit, the bids of one app are counted before jsonschema walks them."""
    monkeypatch.setenv("FAIRPLACE_MAX_BIDS_PER_APP", "10")
    monkeypatch.setattr(io.jsonschema, "Draft202012Validator", None)  # would fail if reached
    path = tmp_path / "bids.json"
    path.write_text(_auction_text(11))
    assert cli.main(["solve", str(path)]) == 2
    err = capsys.readouterr().err
    assert "$.apps[0].bids: 11 bids exceed the limit of 10 bids per app" in err
    assert "FAIRPLACE_MAX_BIDS_PER_APP" in err


@pytest.mark.parametrize(
    ("limit", "doc", "where"),
    [
        (APPS, {"apps": [{"id": "a"}, {"id": "b"}]}, "$.apps"),
        (JOBS, {"jobs": [{}, {}]}, "$.jobs"),
        (JOBS, {"apps": [{"jobs": [{}]}, {"jobs": [{}]}]}, "$.apps[*].jobs"),
        (BIDS_PER_APP, {"apps": [{"bids": []}, {"bids": [{}, {}]}]}, "$.apps[1].bids"),
    ],
)
def test_each_count_limit_names_its_array(monkeypatch, limit, doc, where):
    monkeypatch.setenv(limit.env, "1")
    with pytest.raises(InstanceError, match=rf"^{re.escape(where)}: 2 ") as exc:
        check_instance_sizes(doc, InstanceError)
    assert limit.env in str(exc.value)
    monkeypatch.setenv(limit.env, "2")
    check_instance_sizes(doc, InstanceError)


def test_gpus_beyond_the_contract_range_are_refused_before_the_schema():
    doc = {"gpus": [{}] * (MAX_GPUS + 1)}
    with pytest.raises(InstanceError, match=r"^\$\.gpus: 100,001 GPUs exceed"):
        check_instance_sizes(doc, InstanceError)


@pytest.mark.parametrize("bad", ["abc", "0", "-5", "1.5", "nan", "1e400"])
def test_a_bad_limit_variable_is_an_error_naming_it(monkeypatch, bad):
    monkeypatch.setenv("FAIRPLACE_MAX_APPS", bad)
    with pytest.raises(OptionError, match="^FAIRPLACE_MAX_APPS: must be an integer >= 1"):
        APPS.value()


def test_limit_variables_accept_underscores_and_exponents(monkeypatch):
    monkeypatch.setenv("FAIRPLACE_MAX_APPS", "2_000_000")
    assert APPS.value() == 2_000_000
    monkeypatch.setenv("FAIRPLACE_MAX_APPS", "3e6")
    assert APPS.value() == 3_000_000
    assert {lim.env for lim in SIZE_LIMITS} >= {"FAIRPLACE_MAX_TRACE_ROWS", "FAIRPLACE_MAX_JOBS"}


def test_a_1_2m_row_trace_csv_exits_2_before_pandas_reads_it(tmp_path, monkeypatch, capsys):
    """The audit's 1.2 M-row trace: rows counted from the bytes; pandas never parses it."""
    path = tmp_path / "huge.csv"
    path.write_text(HEADER + "j,1,0,10,resnet\n" * 1_200_000)
    monkeypatch.setattr(pd, "read_csv", None)  # would fail if reached
    t0 = time.perf_counter()
    with pytest.raises(TraceError) as exc:
        load_trace(path)
    seconds = time.perf_counter() - t0
    assert str(exc.value) == (
        f"{path}: 1,200,000 rows exceed the limit of 1,000,000 rows per trace "
        "(set the environment variable FAIRPLACE_MAX_TRACE_ROWS to raise it)"
    )
    print(f"1.2 M-row trace: refused after {seconds:.3f} s")


def test_trace_rows_count_records_blank_lines_and_quoted_newlines(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRPLACE_MAX_TRACE_ROWS", "3")
    rows = ["a,1,0,10,m\n", "\n", "b,1,0,10,m\n", "c,1,0,10,m\r\n", "\n"]
    path = tmp_path / "three.csv"
    path.write_text(HEADER + "".join(rows))
    assert len(load_trace(path)) == 3  # blank lines are no rows
    path.write_text(HEADER + "".join(rows) + "d,1,0,10,m")  # a last line with no newline
    with pytest.raises(TraceError, match="4 rows exceed the limit of 3 rows"):
        load_trace(path)
    quoted = "".join(f'"x\n{k}",1,0,10,m\n' for k in range(6))  # 2 lines a record
    path.write_text(HEADER + quoted[: len(quoted) // 2])  # 6 lines, 3 records: accepted
    assert len(load_trace(path)) == 3
    path.write_text(HEADER + quoted)
    with pytest.raises(TraceError, match="more than 3 rows, the limit per trace"):
        load_trace(path)


def test_trace_frames_and_csv_bytes_have_limits(tmp_path, monkeypatch):
    frame = pd.DataFrame(
        {"job_id": ["a", "b"], "num_gpus": [1, 1], "submit_time": [0, 1], "duration": [5, 5]}
        | {"model": ["m", "m"]}
    )
    monkeypatch.setenv(TRACE_ROWS.env, "1")
    with pytest.raises(TraceError, match="^t: 2 rows exceed the limit of 1 rows per trace"):
        validate_trace(frame, name="t")
    monkeypatch.delenv(TRACE_ROWS.env)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    monkeypatch.setenv(CSV_BYTES.env, "10")
    with pytest.raises(TraceError, match="bytes exceed the limit of 10 bytes per CSV file"):
        load_trace(path)


def test_csv_num_gpus_out_of_range_is_checked_before_the_int_cast(tmp_path):
    """num_gpus = 1e300 names its CSV row and column, with no RuntimeWarning from a cast."""
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "a,1,0,10,m\nb,1e300,0,10,m\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TraceError) as exc:
            load_trace(path)
    assert str(exc.value) == f"{path}: row 2 column 'num_gpus': must be <= 100000, got 1e+300"
    path.write_text(HEADER.strip() + ",phase\na,1,0,10,m,1e300\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TraceError, match="row 1 column 'phase': must be <= 1e\\+06"):
            load_trace(path)


def test_sweep_spec_files_have_the_byte_limit(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n' + "# padding\n" * 100)
    monkeypatch.setenv(JSON_BYTES.env, "100")
    assert cli.main(["sweep", str(spec), "--validate-only"]) == 2
    assert "FAIRPLACE_MAX_JSON_BYTES" in capsys.readouterr().err


def test_size_limit_raises_a_limit_for_a_block_only(tmp_path, monkeypatch):
    """``instances generate`` reads back its own output whatever its size (size_limit)."""
    from fairplace.core.limits import size_limit

    monkeypatch.setenv(JSON_BYTES.env, "100")
    with size_limit(JSON_BYTES, 10_000):
        assert JSON_BYTES.value() == 10_000
    assert JSON_BYTES.value() == 100
    out = tmp_path / "p.json"
    argv = ["instances", "generate", "--kind", "placement", "--apps", "3", "-o", str(out)]
    assert cli.main(argv) == 0 and out.stat().st_size > 100
    with pytest.raises(InstanceError, match="FAIRPLACE_MAX_JSON_BYTES"):
        io.load(out)
