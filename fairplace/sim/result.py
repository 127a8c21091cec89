"""``SimulationResult``: the recorded frames, the summary, saving, a one-row frame, an HTML summary
(Jupyter) and a seaborn overview plot."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.core.errors import OptionError, naming
from fairplace.core.palette import colour


@dataclass(frozen=True)
class SimulationResult:
    """``jobs`` (one row per job), ``apps`` (one row per app), ``rounds`` (one row per decision; ``span``
    = grid rounds it covers), ``summary`` (headline numbers) and ``config`` (what was run)."""

    jobs: pd.DataFrame
    apps: pd.DataFrame
    rounds: pd.DataFrame
    summary: dict
    config: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"SimulationResult({self.config.get('trace', '?')}, {self.config.get('scheduler', '?')}"
            f"/{self.config.get('placement', '?')}: {s['jobs']} jobs, avg JCT {s['avg_jct']:.0f} s, "
            f"p99 {s['p99_jct']:.0f} s, makespan {s['makespan']:.0f} s, "
            f"util {s['utilization']:.2f}, max rho {s['max_rho']:.2f})"
        )

    def save(self, directory: str | Path) -> Path:
        """Write ``jobs.parquet``, ``apps.parquet``, ``rounds.parquet`` and ``summary.json``."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        for name, frame in (("jobs", self.jobs), ("apps", self.apps), ("rounds", self.rounds)):
            with naming(d / f"{name}.parquet"):
                frame.to_parquet(d / f"{name}.parquet", index=False)
        text = json.dumps({"summary": self.summary, "config": self.config}, indent=1, default=str)
        with naming(d / "summary.json"):
            (d / "summary.json").write_text(text)
        return d

    @classmethod
    def load(cls, directory: str | Path) -> SimulationResult:
        """A result written by :meth:`save` (a class method: ``SimulationResult.load(dir)``; the
        frames are attributes, ``res.jobs``; the offered load is ``summary["offered_load"]``)."""
        d = Path(directory)
        meta = json.loads((d / "summary.json").read_text())
        return cls(
            jobs=pd.read_parquet(d / "jobs.parquet"),
            apps=pd.read_parquet(d / "apps.parquet"),
            rounds=pd.read_parquet(d / "rounds.parquet"),
            summary=meta["summary"],
            config=meta.get("config", {}),
        )

    def to_frame(self) -> pd.DataFrame:
        """One row: what was run (``config``) and every scalar of ``summary`` — the row a sweep
        cell writes, so ``pd.concat([r.to_frame() for r in results])`` compares runs."""
        row = {k: v for k, v in {**self.config, **self.summary}.items() if _scalar(v)}
        return pd.DataFrame([row])

    def _repr_html_(self) -> str:
        """The run and its headline numbers as an HTML table (Jupyter)."""
        c, s = self.config, self.summary
        rows = [(name, _fmt(s.get(key)), unit) for key, name, unit in _HEADLINE if key in s]
        table = pd.DataFrame(rows, columns=["metric", "value", "unit"]).to_html(
            index=False, border=0
        )
        what = " / ".join(html.escape(str(c.get(k, "?"))) for k in ("scheduler", "placement"))
        return (
            f"<b>SimulationResult</b> of <code>{html.escape(str(c.get('trace', '?')))}</code>, "
            f"{what}, {s.get('gpus', '?')} GPUs, seed {html.escape(str(c.get('seed', '?')))}"
            f"{table}"
        )

    def plot(self, ax=None, *, axes=None):
        """Three panels: CDF of JCT, GPUs busy over time, CDF of the apps' rho.

        ``ax``: three Axes to draw on (default: a new 1 x 3 figure); returns them as an array,
        like :func:`fairplace.analysis.plots.jct_draws` (``axes=`` is the former name of ``ax``)."""
        import matplotlib.pyplot as plt  # heavy: imported on use
        import seaborn as sns  # heavy: imported on use

        if axes is not None:
            if ax is not None:
                raise OptionError("ax", "give ax or axes, not both")
            ax = axes
        if ax is None:
            _, ax = plt.subplots(1, 3, figsize=(13, 3.6), layout="constrained")
        ax = np.ravel(np.asarray(ax, dtype=object))
        if len(ax) != 3:
            raise OptionError("ax", f"expected 3 Axes (one per panel), got {len(ax)}")
        c = colour(self.config.get("scheduler", ""))  # the scheduler's colour in every figure
        sns.ecdfplot(x=self.jobs["jct"] / 3600, ax=ax[0], color=c)
        ax[0].set(xlabel="JCT (h)", ylabel="fraction of jobs")
        # GPUs busy from 0 to the makespan: the last decision's count held until the run ends
        jobs = self.jobs
        end = jobs["finish"].max() if "finish" in jobs and len(jobs) else None  # absolute time
        t, busy = busy_steps(self.rounds, self.summary.get("makespan") if end is None else end)
        ax[1].step(t / 3600, busy, where="post", color=c)
        ax[1].set_xlim(0, t[-1] / 3600 if len(t) else 1)
        ax[1].set(xlabel="time (h)", ylabel="GPUs busy")
        col = f"rho_{self.summary.get('rho_variant', 'themis')}"
        rho = pd.to_numeric(self.apps[col], errors="coerce")
        sns.ecdfplot(x=rho[np.isfinite(rho) & (rho > 0)], ax=ax[2], color=c)
        ax[2].set_xscale("log")
        ax[2].axvline(1.0, ls="--", c="grey")
        ax[2].set(xlabel=f"{col} (log scale)", ylabel="fraction of apps")
        ax[0].figure.suptitle(
            f"{self.config.get('trace', '')}: {self.config.get('scheduler', '')} / "
            f"{self.config.get('placement', '')}"
        )
        return ax


def busy_steps(rounds: pd.DataFrame, makespan: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(t, GPUs busy) of the rounds as steps to ``makespan`` (the run's end: the last finish): the
    last decision's count held until then (the rounds stop at the last decision, often hours
    before the run ends)."""
    t = rounds["t"].to_numpy(dtype=float)
    busy = rounds["busy"].to_numpy(dtype=float)
    if makespan is not None and np.isfinite(makespan) and (not len(t) or makespan > t[-1]):
        t = np.append(t, float(makespan))
        busy = np.append(busy, busy[-1] if len(busy) else 0.0)
    return t, busy


#: (summary key, label, unit) of the rows of ``SimulationResult._repr_html_``
_HEADLINE = (
    ("jobs", "jobs", ""),
    ("avg_jct", "average JCT", "s"),
    ("median_jct", "median JCT", "s"),
    ("p99_jct", "p99 JCT", "s"),
    ("makespan", "makespan", "s"),
    ("utilization", "utilization", "fraction"),
    ("offered_load", "offered load", "fraction"),
    ("placement_score", "placement score", "1/S"),
    ("max_rho", "max rho", ""),
    ("median_rho", "median rho", ""),
    ("jain_rho", "Jain index of rho", ""),
    ("decisions", "decisions", ""),
    ("wall_seconds", "simulated in", "s"),
)


def _scalar(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.0f}"
    return str(v)
