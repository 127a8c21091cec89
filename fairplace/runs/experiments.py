"""A paper's experiments and claims as data, and the runners that produce their result frames.

An experiment spec (``papers/<paper>/<key>.toml``)::

    [experiment]
    title = "..."
    kind = "sweep"            # sweep | strategyproofness | solver-gap | placement-time
    sizes = ["tiny", "quick", "full"]
    quick_note = "..."        # how this size differs from the full one, and why (<size>_note)
    [[experiment.figure]]     # plot = a function of fairplace.analysis.plots applied to `frame`
    name = "..."; plot = "jct_normalised"; frame = "summary"; args = {...}; where = {...}
    [spec]                    # the kind's spec (a sweep spec for sweeps)
    [size.quick]              # overrides of [spec] for that size (tables merge one level deep)

Each runner calls one public API (``fairplace.runs.sweep.run_sweep`` -> ``fairplace.simulate``,
``fairplace.runs.strategyproofness``, ``fairplace.runs.batch.solve_task`` -> ``fairplace.solve``);
:func:`run_experiment` never raises for a failing experiment: it is ``not run: <reason>``.
"""

from __future__ import annotations

import itertools
import time
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

import fairplace
from fairplace.analysis.claims_schema import check_claims
from fairplace.core.errors import ClusterUnavailable, OptionError, UnknownName
from fairplace.core.registry import Entry, Registry
from fairplace.instances import generators, io
from fairplace.papers import PAPERS
from fairplace.runs import batch, full_size
from fairplace.runs import strategyproofness as sp
from fairplace.runs.sweep import load_spec, results_paths, run_sweep

SIZES = ("tiny", "quick", "full")


@dataclass(frozen=True)
class Experiment:
    """One experiment of a paper at one size (the [spec] with the size's overrides applied)."""

    paper: str
    key: str
    title: str
    kind: str
    spec: dict[str, Any]
    figures: tuple[dict, ...] = ()
    runs: bool = True
    note: str = ""  # [experiment] <size>_note: how this size differs from the full one, and why


@dataclass
class Outcome:
    """What an experiment produced: result frames by name, a status line, seconds."""

    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    status: str = "ok"
    seconds: float = 0.0

    @property
    def ran(self) -> bool:
        return not self.status.startswith("not run")


def _paper_dir(paper: str):
    return resources.files("fairplace.papers").joinpath(paper)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_experiments(paper: str, size: str) -> list[Experiment]:
    """The experiments of ``paper`` (sorted by file name) at ``size``."""
    if paper not in PAPERS:
        raise OptionError("paper", f"unknown paper {paper!r}; known: {', '.join(PAPERS)}")
    if size not in SIZES:
        raise OptionError("size", f"unknown size {size!r}; known: {', '.join(SIZES)}")
    out = []
    for f in sorted(_paper_dir(paper).iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".toml") or f.name == "claims.toml":
            continue
        raw = tomllib.loads(f.read_text())
        meta = raw.get("experiment", {})
        spec = _merge(raw.get("spec", {}), raw.get("size", {}).get(size, {}))
        out.append(
            Experiment(
                paper=paper,
                key=f.name.removesuffix(".toml"),
                title=meta.get("title", f.name),
                kind=meta.get("kind", "sweep"),
                spec=spec,
                figures=tuple(meta.get("figure", [])),
                runs=size in meta.get("sizes", SIZES),
                note=meta.get(f"{size}_note", ""),
            )
        )
    return out


def _full_size(paper: str):
    """The stored full-size results of ``paper`` (``fairplace.runs.full_size``), or None."""
    return full_size.load(str(_paper_dir(paper).joinpath(full_size.FILE)))


def load_claims(paper: str) -> list[dict]:
    """``papers/<paper>/claims.toml``'s claims, validated (a missing or unknown ``kind`` names it)."""
    raw = tomllib.loads(_paper_dir(paper).joinpath("claims.toml").read_text()).get("claim", [])
    return check_claims(raw, f"papers/{paper}/claims.toml")


# ------------------------------------------------------------------ runners (one public API each)


def run_sweep_experiment(
    exp: Experiment, data_dir: Path, simulate=None, progress=True, workers: int = 1,
    scheduler_address: str | None = None, resume: bool = False,
) -> Outcome:  # fmt: skip
    spec = load_spec(exp.spec, check_names=simulate is None)
    out = data_dir / f"{exp.paper}-{exp.key}"
    df = run_sweep(
        spec, out, progress=progress, simulate=simulate, workers=workers,
        scheduler_address=scheduler_address, resume=resume,
    )  # fmt: skip
    frames = {"summary": df}
    if spec.extra:  # [[extra]] cells (PAL: the artifact's own draw) only in "all", not the tables
        cols = [k for _, over in spec.extra for k in over if k in df.columns]
        frames = {"summary": df[df[cols].isna().all(axis=1)], "all": df}
    paths = results_paths(out)
    for f in spec.frames:
        if paths[f"{f}.parquet"].exists():
            frames[f] = pd.read_parquet(paths[f"{f}.parquet"])
    bad = df[df["status"] != "ok"]
    if len(bad) == len(df):
        msg = bad["message"].iloc[0] if len(bad) else "empty grid"
        return Outcome(frames, f"not run: all {len(df)} simulations failed ({msg})")
    status = (
        "ok" if bad.empty else f"ok ({len(bad)}/{len(df)} cells failed: {bad['message'].iloc[0]})"
    )
    return Outcome(frames, status)


def run_strategyproofness(exp: Experiment, data_dir: Path, **_) -> Outcome:
    """THEMIS §6.3 via ``fairplace.runs.strategyproofness``: one row per misreport X."""
    df = sp.strategyproofness(**exp.spec)
    df = df if isinstance(df, pd.DataFrame) else pd.DataFrame(df)
    df.to_csv(data_dir / f"{exp.paper}-{exp.key}.csv", index=False)
    return Outcome({"strategyproofness": df})


def run_solver_gap(exp: Experiment, data_dir: Path, **_) -> Outcome:
    """Generated instances solved by each solver through ``fairplace.runs.batch.solve_task`` (sequential,
    in process); the batch results table with gaps to the exact optimum."""
    s = exp.spec
    gen = getattr(generators, s["generator"])
    grid = s.get("grid", {})
    rows = []
    for values in itertools.product(*grid.values()):
        for seed in s.get("seeds", [0]):
            kw = dict(zip(grid, values, strict=True)) | s.get("fixed", {}) | {"seed": seed}
            inst = gen(**kw)
            payload = io.to_dict(inst)
            for solver in s["solvers"]:
                rows.append(batch.solve_task(inst.name, solver, payload, s.get("time_limit")))
    df = batch.to_frame(rows)
    batch.write_table(df, data_dir / f"{exp.paper}-{exp.key}.csv")
    skipped = df[df["status"].isin(["skipped", "error"])]
    status = "ok"
    if len(skipped):
        status = (
            f"ok ({len(skipped)}/{len(df)} solves skipped or failed: {skipped['message'].iloc[0]})"
        )
    return Outcome({"batch": df}, status)


def run_placement_time(exp: Experiment, data_dir: Path, simulate=None, **_) -> Outcome:
    """PAL Fig. 18: the placement policy's wall seconds at every round of a simulation
    (``fairplace.simulate``'s rounds frame, ``place_seconds``), per cluster size, policy, trace and
    seed; one row per round (``round`` = (t - first decision) / round length). The runs ask the
    policy afresh at every round (``incremental`` and ``skip_quiet`` off, as the paper's scheduler
    does), sequentially in this process."""
    s = exp.spec
    sim = simulate or fairplace.simulate
    fixed = {"incremental": False, "skip_quiet": False} | s.get("fixed", {})
    frames = []
    for gpus, trace, policy, seed in itertools.product(
        s["gpus"], s["traces"], s["policies"], s.get("seeds", [0])
    ):
        res = sim(trace, placement=policy, gpus=gpus, seed=seed, **fixed)
        r = res.rounds
        t = r["t"].to_numpy(float)
        R = float(res.config["round_length"])
        frames.append(
            pd.DataFrame(
                {
                    "gpus": gpus,
                    "policy": policy,
                    "trace": trace,
                    "seed": seed,
                    "round": ((t - t[0]) / R).round().astype(int) if len(t) else [],
                    "jobs": (r["running"] + r["queue"]).to_numpy(),
                    "seconds": r["place_seconds"].to_numpy(float),
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    df.to_csv(data_dir / f"{exp.paper}-{exp.key}.csv", index=False)
    return Outcome({"placement_time": df})


#: an experiment's ``kind`` -> its runner ``f(exp, data_dir, simulate=, progress=, **kw) -> Outcome``
RUNNERS = Registry(
    "experiment kind",
    {
        "sweep": Entry(run_sweep_experiment, None, "a sweep spec over the simulator"),
        "strategyproofness": Entry(run_strategyproofness, None, "misreports against PA"),
        "solver-gap": Entry(run_solver_gap, None, "heuristics against the exact PF"),
        "placement-time": Entry(run_placement_time, None, "per-round placement seconds over sizes"),
    },
    where="kind",
)


def run_experiment(
    exp: Experiment, data_dir: Path, simulate=None, progress=True, workers: int = 1,
    scheduler_address: str | None = None, resume: bool = False,
) -> Outcome:  # fmt: skip
    """Run one experiment; never raises — a missing dependency or a failure is ``not run: ...``,
    except a scheduler that cannot be reached (:class:`OptionError`, the same for every
    experiment) or a cluster left without workers (``ClusterUnavailable``)."""
    t0 = time.perf_counter()
    if not exp.runs:
        return Outcome(status="not run: not part of this size (run without --quick)")
    try:
        runner = RUNNERS.get(exp.kind).factory
        kw = (
            dict(workers=workers, scheduler_address=scheduler_address, resume=resume)
            if exp.kind == "sweep"
            else {}
        )
        out = runner(exp, data_dir, simulate=simulate, progress=progress, **kw)
    except UnknownName as exc:  # an unknown kind: this experiment only
        out = Outcome(status=f"not run: {exc}")
    except (OptionError, ClusterUnavailable):  # the cluster, not the experiment: stop the run
        raise
    except ImportError as exc:
        out = Outcome(status=f"not run: dependency missing ({exc})")
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        out = Outcome(status=f"not run: {type(exc).__name__}: {exc}")
    out.seconds = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------ figures, claims, report
