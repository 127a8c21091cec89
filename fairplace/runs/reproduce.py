"""Paper reproductions: run the experiments of ``papers/<paper>/*.toml``
(``fairplace.runs.experiments``: specs, sizes, runners), evaluate ``papers/<paper>/claims.toml`` on
the results (next to the stored full-size results at smaller sizes) and write ``report.md`` +
``report.html``. One experiment whose dependency is missing or fails is reported as
``not run: <reason>``; its claims likewise.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from fairplace.analysis.claims import (
    NOT_JUDGED_FULL,
    _where,
    against_full,
    evaluate,
    not_run_reason,
)
from fairplace.analysis.report import (
    Section,
    closing_failed_figures,
    headline,
    headline_counts,
    headline_lines,
    png,
    write_report,
)
from fairplace.analysis.tables import PACKED_BASELINES, draw_gains, ok_rows, themis_table
from fairplace.core.errors import OptionError
from fairplace.core.progress import ProgressBar, progress_bar
from fairplace.papers import PAPERS
from fairplace.runs import full_size
from fairplace.runs.experiments import (  # noqa: F401 - the documented imports stay here
    RUNNERS,
    SIZES,
    Experiment,
    Outcome,
    _full_size,
    load_claims,
    load_experiments,
    run_experiment,
    run_placement_time,
    run_solver_gap,
    run_strategyproofness,
    run_sweep_experiment,
)
from fairplace.runs.params import WORKERS


def make_figures(exp: Experiment, outcome: Outcome):
    """[(name, PNG bytes)] and [(name, reason)] of figures that could not be drawn."""
    from fairplace.analysis import plots  # heavy (matplotlib, seaborn): imported on use

    made, failed = [], []
    for f in exp.figures:
        try:
            df = ok_rows(outcome.frames[f.get("frame", "summary")])
            if f.get("where"):
                df = _where(df, f["where"])
            with closing_failed_figures():
                ax = getattr(plots, f["plot"])(df, **f.get("args", {}))
            made.append((f["name"], png(ax)))  # png() closes the figure
        except Exception as exc:  # noqa: BLE001 - a figure that cannot be drawn is reported
            failed.append((f["name"], f"{type(exc).__name__}: {exc}"))
    return made, failed


def _summary_table(exp: Experiment, outcome: Outcome) -> tuple[str, pd.DataFrame] | None:
    """Mean of the headline metrics per (scheduler, placement, grid params) — over seeds, and over
    traces when the grid has params — or per (scheduler, placement, trace) otherwise."""
    if "batch" in outcome.frames:
        b = outcome.frames["batch"]
        b = b[~b["status"].isin(["error", "skipped"])]
        agg = b.groupby("solver").agg(
            instances=("instance", "nunique"),
            median_gap=("gap", "median"),
            max_gap=("gap", "max"),
            mean_seconds=("seconds", "mean"),
        )
        return "Per solver (gap: relative to the exact optimum, >= 0 = worse)", agg.reset_index()
    if "strategyproofness" in outcome.frames:
        frame = outcome.frames["strategyproofness"]
        frame = (  # the liar's id is not averaged
            frame.drop(columns=["seed"], errors="ignore")
            .groupby("X", as_index=False)
            .mean(numeric_only=True)
        )
        return "Completion times (s) vs misreport X (mean over seeds)", frame.round(3)
    if "placement_time" in outcome.frames:
        t = outcome.frames["placement_time"].groupby(["gpus", "policy"])["seconds"]
        per_round = t.agg(median_seconds="median", max_seconds="max")
        return "Seconds per placement round", per_round.reset_index()
    df = outcome.frames.get("summary")
    if df is None or df.empty or "status" not in df:
        return None
    df = df[df["status"] == "ok"]
    metrics = [
        c
        for c in (
            "avg_jct",
            "p99_jct",
            "makespan",
            "utilization",
            "offered_load",
            "max_rho",
            "median_rho",
            "restart_gpu_share",
        )  # fmt: skip
        if c in df
    ]
    params = [p for p in exp.spec.get("params", {}) if p in df]
    keys = ["scheduler", "placement", *(params or ["trace"])]
    keys = [k for k in keys if k in df and (df[k].nunique() > 1 or k in params)]
    if not metrics or not keys or df.empty:
        return None
    label = "Mean over seeds" + (" and traces" if params and df["trace"].nunique() > 1 else "")
    return label, df.groupby(keys, as_index=False)[metrics].mean().round(3)


def _draws_table(exp: Experiment, outcome: Outcome) -> tuple[str, pd.DataFrame] | None:
    """Average-JCT reduction of every policy vs both packed baselines, paired by cluster draw (seed):
    median and interquartile range over draws, per workload (and per grid params / scheduler)."""
    df = outcome.frames.get("summary")
    if df is None or df.empty or "avg_jct" not in df or "seed" not in df:
        return None
    df = df[df["status"] == "ok"]
    if not set(PACKED_BASELINES) & set(df["placement"]):
        return None
    by = [k for k in ("scheduler", *exp.spec.get("params", {}), "trace") if k in df]
    by = [k for k in by if df[k].nunique() > 1 or k == "trace"]
    t = draw_gains(df, "avg_jct", by=tuple(by))
    n = int(df["seed"].nunique())
    label = (
        f"Average-JCT reduction vs each packed baseline, paired by cluster draw: median and "
        f"interquartile range over {n} draw{'s' if n != 1 else ''} (seeds), % (> 0 = better)"
    )
    return label, t


def _values(v) -> str:
    if isinstance(v, list):
        return ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v) or "none"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _size_diff(spec: dict, full: dict, prefix: str = "") -> list[str]:
    """``key value (full size: value)`` for every value of ``spec`` that differs from ``full`` (one
    table level deep; seeds as a count)."""
    out = []
    for k in sorted(set(spec) | set(full)):
        a, b = spec.get(k), full.get(k)
        if a == b or k == "name":
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += _size_diff(a, b, f"{prefix}{k}.")
        elif k == "seeds" and isinstance(a, list) and isinstance(b, list):
            out.append(f"{len(a)} seed{'s' if len(a) != 1 else ''} (full size: {len(b)})")
        else:
            shown = "absent" if a is None else _values(a)
            out.append(f"{prefix}{k} {shown} (full size: {'absent' if b is None else _values(b)})")
    return out


def size_line(exp: Experiment, full: Experiment | None, size: str) -> str:
    """The section's size, in the same words for every paper: ``Full size.`` or ``<Size> size:
    <the experiment's note>; <what differs from the full size, from the specs>.``; ``<Size> size:
    not run (needs the full size).`` for an experiment outside this size."""
    if size == "full":
        return f"Full size: the experiment as specified (papers/{exp.paper}/{exp.key}.toml)."
    head = f"{size.capitalize()} size: "
    if not exp.runs:
        return head + "not run (needs the full size)."
    diff = _size_diff(exp.spec, full.spec) if full is not None else []
    parts = [p for p in (exp.note.rstrip("."), "; ".join(diff)) if p]
    if not parts:
        return head + "the same spec as the full size."
    return head + (f"{parts[0]} (differs from the full size in: {parts[1]})" if len(parts) == 2
                   else ("differs from the full size in: " if diff else "") + parts[0]) + "."  # fmt: skip


def _git_commit() -> str:
    try:
        here = Path(__file__).resolve().parent
        r = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True
        )
        return r.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def reproduce(
    which: str = "all",
    size: str = "quick",
    out: str | Path = "fairplace-report",
    simulate: Callable | None = None,
    progress: bool | ProgressBar = True,
    log: Callable[[str], None] | None = None,
    workers: int = 1,
    scheduler_address: str | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Run the experiments of ``which`` (themis | pal | all) at ``size`` and write the report.

    Returns ``{"md", "html", "claims" (paths), "table" (the claims DataFrame; ``study`` = the
    paper, ``kind`` = paper claim or package check), "headline" ("THEMIS: paper claims: a of n
    reproduce, b in direction, c do not; package checks: x of m pass. PAL: ... Total: ..."),
    "headlines" (those sentences, one per study and the total), "counts" ({study | "total":
    {"paper": {n, reproduces, ...}, "check": {n, passes, ...}}}), "seconds"}``.
    ``simulate`` replaces ``fairplace.simulate`` (tests); ``workers > 1`` runs sweep cells on a
    loopback Dask cluster, ``scheduler_address`` on an existing one (sequential by default); each
    sweep journals its cells (``data/<paper>-<experiment>.jsonl``) as they finish; ``resume``
    keeps the cells already journaled there (``run_sweep(resume=True)``)."""
    if which not in (*PAPERS, "all"):
        raise OptionError("paper", f"unknown paper {which!r}; use themis, pal or all")
    WORKERS.check(workers, WORKERS.flag)  # before any experiment runs (each would fail on it)
    papers = PAPERS if which == "all" else (which,)
    exps = [e for p in papers for e in load_experiments(p, size)]
    fulls = {(e.paper, e.key): e for p in papers for e in load_experiments(p, "full")}
    out = Path(out)
    data_dir = out / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    outcomes: dict[tuple[str, str], Outcome] = {}
    sections, rows = [], []
    with progress_bar(len(exps), f"reproduce {which}", progress) as bar:
        for e in exps:
            if log:
                log(f"[{e.paper}] {e.key}: {e.title}")
            o = run_experiment(
                e, data_dir, simulate=simulate, progress=bar, workers=workers,
                scheduler_address=scheduler_address, resume=resume,
            )  # fmt: skip
            outcomes[(e.paper, e.key)] = o
            if log:
                log(f"[{e.paper}] {e.key}: {o.status} ({o.seconds:.1f} s)")
            status = o.status if o.ran else f"not run: {not_run_reason(o.status)}"
            sec = Section(title=f"{e.paper.upper()} — {e.title}", status=status)
            sec.lines.append(f"Experiment `{e.paper}/{e.key}` ({e.kind}), {o.seconds:.1f} s.")
            sec.lines.append(size_line(e, fulls.get((e.paper, e.key)), size))
            if o.ran:
                sec.figures, failed = make_figures(e, o)
                sec.lines += [f"Figure '{n}' not drawn: {why}" for n, why in failed]
                tab = _summary_table(e, o)
                if tab is not None:
                    sec.tables.append(tab)
                if e.paper == "pal":
                    draws = _draws_table(e, o)
                    if draws is not None:
                        sec.tables.append(draws)
                summ = o.frames.get("summary")
                if e.paper == "themis" and summ is not None and "max_rho" in summ:
                    sec.tables.append(
                        ("Max rho per scheduler: mean ± sd over seeds (best baseline / THEMIS "
                         "per seed: mean, min..max); idle GPU-hours while jobs wait; THEMIS' "
                         "auction statistics", themis_table(summ))
                    )  # fmt: skip
            sections.append(sec)
            bar.advance()
    stored: list[str] = []  # where the full-size outcomes come from, per paper
    for p in papers:
        full = _full_size(p) if size != "full" else None
        notes = {e.key: e.note for e in exps if e.paper == p}
        judged = []
        for c in load_claims(p):
            got = outcomes.get((p, c["experiment"]))
            if got is None:
                row = evaluate(c, None, f"not run: no experiment {c['experiment']!r}")
            elif not got.ran:
                row = evaluate(c, None, got.status)
            else:
                d = outcomes.get((p, c.get("draws", "")))
                row = evaluate(c, got.frames, draws=d.frames if d and d.ran else None)
            if size != "full":  # next to the stored full size, or marked as never judged there
                where = f"papers/{p}/{full_size.FILE}"
                ref = full[0].get(c["experiment"]) if full is not None else None
                row = against_full(row, c, ref, notes.get(c["experiment"], ""), where)
            judged.append({"study": p, **row})
        # the paper's own claims first, then the package's own checks (counted apart)
        rows += sorted(judged, key=lambda r: r["kind"] != "paper")
        if full is not None:
            stored.append(f"{p.upper()}: papers/{p}/{full_size.FILE} ({full[1]})")
        elif size != "full":
            stored.append(f"{p.upper()}: none stored (no papers/{p}/{full_size.FILE}), so every "
                          f"{p.upper()} claim is '{NOT_JUDGED_FULL}'")  # fmt: skip
    table = pd.DataFrame(rows)
    seconds = time.perf_counter() - t0
    preamble = [
        f"Command: fairplace reproduce {which}{' --quick' if size == 'quick' else ''}"
        f"{' (size ' + size + ')' if size == 'tiny' else ''}; fairplace commit {_git_commit()}; "
        f"generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {seconds:.0f} s.",
        f"{headline(table, size)}. Paper claims are the papers' own (their words and sections), "
        "package checks are the package's own (solver optimality, work conservation, comparisons "
        "the papers do not make): they are counted apart. 'reproduces' = ours (mean over seeds) "
        "inside the paper's range (or its stated tolerance); 'direction only' = outside it but on "
        "the paper's side of no effect; a check 'passes' inside its range and 'fails' otherwise; "
        "the spread is min..max over seeds. Raw results are in data/.",
    ]
    if stored:
        preamble.append(f"The full size column leads: each claim judged on the stored full-size "
                        f"results, which the headline counts where they exist; the {size} columns "
                        "are this run's (where they differ, the reason says why this size "
                        "differs): " + "; ".join(stored) + ".")  # fmt: skip
        preamble.append(f"This run alone ({size}): " + ". ".join(headline_lines(table, size, True)))
    paths = write_report(
        out, "fairplace reproduction report", table, sections, preamble,
        size=size if size != "full" else None,
    )  # fmt: skip
    return {
        **paths,
        "table": table,
        "headline": headline(table, size),
        "headlines": headline_lines(table, size),
        "counts": headline_counts(table),
        "seconds": seconds,
    }
