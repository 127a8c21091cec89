"""``SimulationResult``: the recorded frames, the summary, saving and a seaborn overview plot."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fairplace.core.errors import naming


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
        d = Path(directory)
        meta = json.loads((d / "summary.json").read_text())
        return cls(
            jobs=pd.read_parquet(d / "jobs.parquet"),
            apps=pd.read_parquet(d / "apps.parquet"),
            rounds=pd.read_parquet(d / "rounds.parquet"),
            summary=meta["summary"],
            config=meta.get("config", {}),
        )

    def plot(self, axes=None):
        """Three panels: JCT CDF, GPUs busy over time, CDF of app rho. Returns the figure."""
        import matplotlib.pyplot as plt
        import seaborn as sns

        if axes is None:
            fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        else:
            fig = axes[0].figure
        sns.ecdfplot(x=self.jobs["jct"] / 3600, ax=axes[0])
        axes[0].set(xlabel="JCT (h)", ylabel="fraction of jobs")
        r = self.rounds
        axes[1].step(r["t"] / 3600, r["busy"], where="post")
        axes[1].set(xlabel="time (h)", ylabel="GPUs busy")
        col = f"rho_{self.summary.get('rho_variant', 'themis')}"
        sns.ecdfplot(x=self.apps[col], ax=axes[2])
        axes[2].axvline(1.0, ls="--", c="grey")
        axes[2].set(xlabel=col, ylabel="fraction of apps")
        fig.suptitle(
            f"{self.config.get('trace', '')}: {self.config.get('scheduler', '')} / "
            f"{self.config.get('placement', '')}"
        )
        fig.tight_layout()
        return fig
