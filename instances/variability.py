"""GPU variability profiles (PAL §IV-C): real Longhorn and Frontera data and a fitted synthetic generator.

* Longhorn (V100) per-GPU runs of ResNet-50, BERT and PageRank: ``perf`` (a time, higher = slower) is
  divided by its median over all runs, then the per-``uuid`` median gives one PM-score per GPU
  (1 = the median GPU). :func:`longhorn_profile`.
* An N-GPU cluster samples each class's profile *without repetition* (paper, §IV-C); the artifact samples
  with replacement (``with_replacement=True``). Classes that share a profile (the artifact's B and C are
  both BERT) share the sampled values, like the two identical BERT columns of the Frontera table.
* ``longhorn-artifact``: the PAL artifact's own draw, replayed exactly (:func:`artifact_pm_scores`).
* Frontera (Quadro RTX 5000) 8 machines x 4 GPUs with per-class scores: :func:`frontera_cluster`.
* :class:`Mixture`: a tight normal body plus a heavy (log-normal excess) slow tail, fitted per profile;
  :func:`synthetic_pm_scores` draws clusters of any size (100,000 GPUs in milliseconds).

Data are read from the package (``fairplace.instances``, folder ``data``) through importlib.resources.
Bad data raise :class:`~fairplace.core.errors.DataError` naming the file or column.
"""

from __future__ import annotations

import io
import random
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.core.domain import GPU, Cluster
from fairplace.core.errors import DataError
from fairplace.core.limits import CSV_BYTES, check_file_bytes

from .generators import grid_cluster
from .models import ARTIFACT_CLASS_PROFILES, PAPER_CLASS_PROFILES

APPS = ("resnet50", "bert", "pagerank")
#: ``longhorn-runs`` samples per-run rows (scores up to ~3.6x, like the paper's sampling of "this
#: profiling data"; the default); ``longhorn`` takes each GPU's median over its runs (ARCHITECTURE.md; up to
#: ~1.12x); ``longhorn-artifact`` replays the PAL artifact's seeded draw (:func:`artifact_pm_scores`).
#: ``uniform``: every PM-score 1 (homogeneous GPUs; THEMIS models no per-GPU variability, the default
#: of its workloads).
PROFILE_NAMES = (
    "longhorn-runs",
    "longhorn",
    "longhorn-artifact",
    "frontera",
    "synthetic",
    "uniform",
)
#: The artifact's draw: Python's ``random`` seeded with 42, one ``random.choice`` per GPU per class in
#: this order (the keys of its ``profiles.json``; B and C both read the BERT file).
ARTIFACT_SEED = 42
ARTIFACT_DRAW_ORDER = ("A", "B", "C", "D")
#: Frontera table columns per class: the paper's C is the PageRank column (the artifact's class D).
FRONTERA_COLUMNS = {
    "paper": {"A": "PerfVar_classA", "B": "PerfVar_classB", "C": "PerfVar_classD"},
    "artifact": {c: f"PerfVar_class{c}" for c in "ABCD"},
}


def data_file(*parts: str):
    """A bundled data file (a Traversable) under ``fairplace.instances/data``."""
    return resources.files("fairplace.instances").joinpath("data", *parts)


def _read_csv(source, label: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """Read a CSV (Traversable, path or text buffer), check ``columns``; DataError otherwise."""
    try:
        if isinstance(source, (str, Path)):
            check_file_bytes(source, CSV_BYTES, label)  # before pandas parses it
            df = pd.read_csv(source)
        elif isinstance(source, io.IOBase):
            df = pd.read_csv(source)
        else:
            with source.open("r") as fh:
                df = pd.read_csv(fh)
    except (FileNotFoundError, IsADirectoryError):
        raise DataError(label, f"data file not found: {source}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(label, f"cannot parse CSV: {exc}") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(label, f"missing column(s) {missing}; found {list(df.columns)[:12]}")
    return df


def _class_profiles(classes: str) -> Mapping[str, str]:
    if classes == "paper":
        return PAPER_CLASS_PROFILES
    if classes == "artifact":
        return ARTIFACT_CLASS_PROFILES
    raise DataError("classes", f"unknown class mapping {classes!r}; use 'paper' or 'artifact'")


def longhorn_profile(app: str, source=None, per_run: bool = False) -> pd.Series:
    """PM-score per GPU (index ``uuid``, sorted) of one Longhorn application profile.

    ``perf / median(perf)`` over all runs, then the median per ``uuid``. ``per_run=True`` keeps every
    run instead (index ``uuid`` repeated): the slow runs reach ~3.6x for ResNet-50, the per-GPU medians
    only ~1.12x. ``source`` overrides the bundled file (columns ``uuid`` and ``perf``).
    """
    uuid, norm = _longhorn_runs(app, source)
    if per_run:
        return pd.Series(norm.to_numpy(), index=uuid, name=app).sort_index(kind="stable")
    return norm.groupby(uuid).median().sort_index().rename(app)


def _longhorn_runs(app: str, source=None) -> tuple[pd.Series, pd.Series]:
    """(uuid, perf / median(perf over all runs)) of every run of one Longhorn profile, file order."""
    if app not in APPS:
        raise DataError("profile", f"unknown Longhorn profile {app!r}; known: {', '.join(APPS)}")
    label = f"variability/longhorn/{app}.csv"
    df = _read_csv(
        data_file("variability", "longhorn", f"{app}.csv") if source is None else source,
        label,
        ("uuid", "perf"),
    )
    perf = pd.to_numeric(df["perf"], errors="coerce")
    if perf.isna().any() or not np.all(np.isfinite(perf)) or (perf <= 0).any() or perf.empty:
        raise DataError(f"{label}: perf", "must be positive finite numbers")
    return df["uuid"].astype(str), perf / perf.median()


def longhorn_runs(app: str, source=None) -> np.ndarray:
    """Every run's ``perf / median(perf over all runs)`` of one Longhorn profile, in file row order."""
    return _longhorn_runs(app, source)[1].to_numpy()


def artifact_pm_scores(n: int, *, classes: str = "artifact") -> dict[str, np.ndarray]:
    """The PAL artifact's PM-scores for ``n`` GPUs, replayed exactly (profile ``longhorn-artifact``).

    ``r = random.Random(42)``; for GPU 0..n-1, for class A, B, C, D: ``r.choice(runs)`` where ``runs``
    is :func:`longhorn_runs` of the class's profile (A ResNet-50, B and C BERT drawn separately,
    D PageRank): per-run scores with replacement. ``classes='paper'`` keeps A, B and the D column as C
    (the paper's PageRank class). The draw does not depend on any simulation seed.
    """
    n = _check_n(n)
    runs = {app: longhorn_runs(app).tolist() for app in set(ARTIFACT_CLASS_PROFILES.values())}
    rng = random.Random(ARTIFACT_SEED)
    out = {c: np.empty(n) for c in ARTIFACT_DRAW_ORDER}
    for g in range(n):
        for c in ARTIFACT_DRAW_ORDER:
            out[c][g] = rng.choice(runs[ARTIFACT_CLASS_PROFILES[c]])
    if classes == "artifact":
        return out
    _class_profiles(classes)  # validates the name
    return {"A": out["A"], "B": out["B"], "C": out["D"]}


def sample_pm_scores(
    n: int,
    *,
    classes: str = "paper",
    seed: int = 0,
    with_replacement: bool = False,
    per_run: bool = False,
) -> dict[str, np.ndarray]:
    """PM-scores of an ``n``-GPU cluster per class, sampled from the Longhorn profiles.

    Without replacement (the paper) ``n`` may not exceed the profile's GPU count (336 ResNet-50, 136 BERT,
    172 PageRank); ``with_replacement=True`` is the artifact's sampling. ``per_run=True`` samples runs
    (see :func:`longhorn_profile`) instead of per-GPU medians.
    """
    n = _check_n(n)
    rng = np.random.default_rng(seed)
    per_app = {}
    for app in sorted(set(_class_profiles(classes).values())):
        values = longhorn_profile(app, per_run=per_run).to_numpy()
        if not with_replacement and n > values.size:
            raise DataError(
                "n",
                f"{n} GPUs exceed the {values.size} {'runs' if per_run else 'GPUs'} of the Longhorn {app} profile when sampling "
                "without replacement; use with_replacement=True (artifact) or the synthetic profile",
            )
        per_app[app] = rng.choice(values, size=n, replace=with_replacement)
    return {c: per_app[app].copy() for c, app in _class_profiles(classes).items()}


@dataclass(frozen=True)
class Mixture:
    """PM-score mixture: Normal(body_mean, body_std) with probability ``1 - tail_weight``, else
    ``tail_start + LogNormal(tail_mu, tail_sigma)`` (a heavy slow tail). Samples are divided by their
    median, so the median GPU scores 1."""

    body_mean: float
    body_std: float
    tail_weight: float
    tail_start: float
    tail_mu: float
    tail_sigma: float

    @classmethod
    def fit(cls, values) -> Mixture:
        """Tail = scores above median + 3 * 1.4826 * MAD; body moments on the rest; log-normal excess."""
        x = np.asarray(values, dtype=float)
        if x.size < 3 or not np.all(np.isfinite(x)):
            raise DataError("values", "need at least 3 finite scores to fit a mixture")
        med = float(np.median(x))
        sigma = max(1.4826 * float(np.median(np.abs(x - med))), 1e-6)
        start = med + 3.0 * sigma
        tail = x > start
        body = x[~tail]
        excess = np.log(x[tail] - start)
        mu = float(excess.mean()) if excess.size else float(np.log(sigma))
        s = float(excess.std(ddof=1)) if excess.size > 1 else 0.5
        return cls(float(body.mean()), float(body.std(ddof=1)), float(tail.mean()), start, mu, s)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        is_tail = rng.random(n) < self.tail_weight
        v = rng.normal(self.body_mean, self.body_std, n)
        k = int(is_tail.sum())
        v[is_tail] = self.tail_start + rng.lognormal(self.tail_mu, self.tail_sigma, k)
        v = np.maximum(v, 1e-3)
        return v / np.median(v)


def fitted_mixtures() -> dict[str, Mixture]:
    """One :class:`Mixture` per Longhorn application profile."""
    return {app: Mixture.fit(longhorn_profile(app).to_numpy()) for app in APPS}


def synthetic_pm_scores(n: int, *, classes: str = "paper", seed: int = 0) -> dict[str, np.ndarray]:
    """Synthetic PM-scores for ``n`` GPUs (any size, e.g. 100,000) from the fitted mixtures."""
    n = _check_n(n)
    rng = np.random.default_rng(seed)
    mix = fitted_mixtures()
    profiles = _class_profiles(classes)
    per_app = {app: mix[app].sample(n, rng) for app in sorted(set(profiles.values()))}
    return {c: per_app[app].copy() for c, app in profiles.items()}


def frontera_table(source=None) -> pd.DataFrame:
    """The Frontera 32-GPU table (8 machines x 4 GPUs, PM-scores per artifact class A..D)."""
    cols = ("GPU_ID", "Local_GPU_ID", "Node_ID", *FRONTERA_COLUMNS["artifact"].values())
    df = _read_csv(
        data_file("variability", "frontera-32gpu", "pm-scores.csv") if source is None else source,
        "variability/frontera-32gpu/pm-scores.csv",
        cols,
    )
    return df.sort_values("GPU_ID", kind="stable").reset_index(drop=True)


def frontera_cluster(classes: str = "paper", source=None) -> Cluster:
    """The Frontera table as a :class:`Cluster`: GPU ``m{node}/{local}`` on machine ``m{node}``, rack r0.

    ``classes='paper'``: A, B, C (C = the PageRank column); ``'artifact'``: A..D as in the table.
    """
    cols = _frontera_columns(classes)
    df = frontera_table(source)
    gpus = tuple(
        GPU(
            id=f"m{int(r.Node_ID)}/{int(r.Local_GPU_ID)}",
            machine=f"m{int(r.Node_ID)}",
            rack="r0",
            pm={c: float(getattr(r, col)) for c, col in cols.items()},
        )
        for r in df.itertuples(index=False)
    )
    return Cluster(gpus)


def _frontera_columns(classes: str) -> dict[str, str]:
    if classes not in FRONTERA_COLUMNS:
        raise DataError("classes", f"unknown class mapping {classes!r}; use 'paper' or 'artifact'")
    return FRONTERA_COLUMNS[classes]


def make_cluster(
    profile: str,
    machines: int,
    gpus_per_machine: int,
    *,
    seed: int = 0,
    classes: str = "paper",
    with_replacement: bool = False,
    machines_per_rack: int | None = None,
    per_run: bool = False,
) -> Cluster:
    """A ``machines`` x ``gpus_per_machine`` cluster (GPU ids ``m{k}/{g}``) with PM-scores per class.

    ``longhorn`` / ``longhorn-runs``: sampled from the Longhorn profiles (see :func:`sample_pm_scores`;
    ``per_run`` applies to them only); ``longhorn-artifact``: the artifact's fixed draw
    (:func:`artifact_pm_scores`; ``seed`` and ``with_replacement`` do not apply); ``synthetic``: the
    fitted mixtures; ``frontera``: whole real machines drawn from the 8 Frontera machines (a seeded
    permutation without replacement, so within-machine correlation is kept), the first
    ``gpus_per_machine`` (<= 4) GPUs of each.
    """
    machines, gpm = _check_n(machines, "machines"), _check_n(gpus_per_machine, "gpus_per_machine")
    n = machines * gpm
    if profile in ("longhorn", "longhorn-runs"):
        per_run = per_run or profile == "longhorn-runs"
        pm = sample_pm_scores(
            n, classes=classes, seed=seed, with_replacement=with_replacement, per_run=per_run
        )
    elif profile == "longhorn-artifact":
        pm = artifact_pm_scores(n, classes=classes)
    elif profile == "synthetic":
        pm = synthetic_pm_scores(n, classes=classes, seed=seed)
    elif profile == "frontera":
        pm = _frontera_machines(machines, gpm, classes, seed, with_replacement)
    elif profile == "uniform":
        pm = {c: np.ones(n) for c in _class_profiles(classes)}
    else:
        raise DataError(
            "profile", f"unknown variability profile {profile!r}; known: {', '.join(PROFILE_NAMES)}"
        )
    return grid_cluster(machines, gpm, machines_per_rack, pm=pm)


def _frontera_machines(machines, gpm, classes, seed, with_replacement) -> dict[str, np.ndarray]:
    cols = _frontera_columns(classes)
    df = frontera_table()
    nodes = np.unique(df["Node_ID"].to_numpy())
    if gpm > 4:
        raise DataError("gpus_per_machine", f"Frontera machines have 4 GPUs, asked for {gpm}")
    if not with_replacement and machines > nodes.size:
        raise DataError(
            "machines",
            f"{machines} machines exceed the {nodes.size} Frontera machines without replacement; "
            "use with_replacement=True",
        )
    rng = np.random.default_rng(seed)
    pick = rng.choice(nodes, size=machines, replace=with_replacement)
    rows = np.concatenate([np.flatnonzero(df["Node_ID"].to_numpy() == m)[:gpm] for m in pick])
    return {c: df[col].to_numpy(dtype=float)[rows] for c, col in cols.items()}


def _check_n(n, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DataError(name, f"must be a positive integer, got {n!r}")
    return int(n)
