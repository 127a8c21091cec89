"""The ML models of PAL's workloads (Table II): application class, per-iteration time, locality penalty.

One frozen table, :data:`MODELS`, shared by the placement policies, the simulator and the THEMIS
workloads; :func:`model` looks a row up (case-, ``-`` and ``_``-insensitive) and raises
:class:`~fairplace.core.errors.DataError` for an unknown name.

* ``paper_class``: Table II (three classes, A most compute-bound / variability-sensitive).
* ``artifact_class``: the public artifact's four classes (ARCHITECTURE.md): A ResNet-50, B and C BERT, D PageRank
  profiles, with vgg19 -> C, DCGAN -> B, PointNet -> D. GPT2 is not in that list; it is mapped to B (a
  language model profiled like BERT) — an assumption, see :data:`ASSUMPTIONS`.
* ``iter_seconds``: serial per-iteration seconds of the Sia-Philly traces (ARCHITECTURE.md), to four
  significant digits (table ``rounded``, the default); :data:`ARTIFACT_ITER_SECONDS` has the PAL
  artifact's own values (``workload/workload.py``, ``get_per_iter_time``) to full precision (table
  ``artifact``): :func:`iter_seconds` reads either.
* ``locality_penalty``: per-model L_across. The paper estimates these on Frontera but does not print them;
  the values here are the artifact's per-class design-time table (``lf_model``: A 1.16, B 1.0, C 1.0,
  D 1.10) read through ``artifact_class``. The paper's constant (1.7) is :data:`DEFAULT_LOCALITY`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from fairplace.core.errors import DataError
from fairplace.core.shared_params import LOCALITY_PENALTY

#: PAL's constant inter-node locality penalty (§IV-D, Synergy simulations and the artifact): the
#: default of the one spec, :data:`fairplace.core.shared_params.LOCALITY_PENALTY`.
DEFAULT_LOCALITY = LOCALITY_PENALTY.default

#: The artifact's per-class design-time locality table (``lf_model`` in its PAL placement).
ARTIFACT_CLASS_LOCALITY = MappingProxyType({"A": 1.16, "B": 1.0, "C": 1.0, "D": 1.10})

#: Inter-node locality penalties measured on Frontera per (model, number of GPUs), as coded in the PAL
#: artifact's simulator (``blox_manager._get_locality_penalty``, hal-uw/blox-pal, MIT); pairs it does not
#: list run at 1.0. PAL §IV-D: "we estimate per-model locality penalties from our physical cluster
#: experiments, and use these in simulation experiments in Sections V-A and V-B" (the Sia-Philly runs).
#: The artifact's later code applies the constant 1.7 instead (:data:`DEFAULT_LOCALITY`).
MEASURED_LOCALITY = MappingProxyType(
    {
        ("PointNet", 6): 1.0,
        ("PointNet", 8): 1.10,
        ("PointNet", 12): 1.20,
        ("PointNet", 16): 1.25,
        ("DCGAN", 6): 1.0,
        ("DCGAN", 8): 1.0,
        ("DCGAN", 12): 1.0,
        ("vgg19", 1): 1.0,
        ("resnet50", 4): 1.0,
        ("resnet50", 16): 1.16,
    }
)

#: Runtime locality models of the simulator: one constant L for every spread job, or the measured table.
LOCALITY_MODELS = ("constant", "measured")


def measured_locality(name: str, gpus: int) -> float:
    """L_across of ``name`` on ``gpus`` GPUs from :data:`MEASURED_LOCALITY` (1.0 if not listed)."""
    key = _norm(name)
    for (m, n), v in MEASURED_LOCALITY.items():
        if _norm(m) == key and int(n) == int(gpus):
            return float(v)
    return 1.0


#: The Longhorn profile each class uses: the paper's three classes and the artifact's four.
PAPER_CLASS_PROFILES = MappingProxyType({"A": "resnet50", "B": "bert", "C": "pagerank"})
ARTIFACT_CLASS_PROFILES = MappingProxyType(
    {"A": "resnet50", "B": "bert", "C": "bert", "D": "pagerank"}
)

ASSUMPTIONS = (
    "GPT2's artifact class is B (not listed in the artifact mapping).",
    "Per-model locality penalties are the artifact's per-class lf_model values.",
)


@dataclass(frozen=True)
class ModelSpec:
    """One row of Table II plus the simulation parameters of the model."""

    name: str
    task: str
    dataset: str
    batch_size: int
    paper_class: str
    artifact_class: str
    iter_seconds: float
    locality_penalty: float

    def cls(self, mapping: str = "paper") -> str:
        """The model's application class under ``mapping`` = ``paper`` | ``artifact``."""
        if mapping == "paper":
            return self.paper_class
        if mapping == "artifact":
            return self.artifact_class
        raise DataError("mapping", f"unknown class mapping {mapping!r}; use 'paper' or 'artifact'")

    @property
    def locality_sensitive(self) -> bool:
        """True when spreading over machines costs more than 5% (L_across > 1.05)."""
        return self.locality_penalty > 1.05


def _row(name, task, dataset, batch, paper, artifact, t_iter) -> ModelSpec:
    return ModelSpec(
        name, task, dataset, batch, paper, artifact, t_iter, ARTIFACT_CLASS_LOCALITY[artifact]
    )


#: Table II, keyed by the canonical name used in the Sia-Philly traces.
MODELS: MappingProxyType[str, ModelSpec] = MappingProxyType(
    {
        m.name: m
        for m in (
            _row("PointNet", "Image", "ShapeNet", 32, "C", "D", 0.28125),
            _row("vgg19", "Image", "ImageNet2012", 32, "A", "C", 0.3006),
            _row("DCGAN", "Vision", "LSUN", 128, "A", "B", 0.0469),
            _row("BERT", "Language", "WikiText", 64, "B", "B", 0.179),
            _row("resnet50", "Image", "ImageNet2012", 32, "A", "A", 0.1754),
            _row("GPT2", "Language", "WikiText", 128, "B", "B", 3.5714),
        )
    }
)


#: The PAL artifact's per-iteration seconds (``workload/workload.py``, ``get_per_iter_time``), as it
#: simulates with them. ``MODELS`` rounds three of them to four digits (DCGAN by 5.7e-4 relative):
#: enough to move a completion across a round boundary (W4 Packed-Sticky, job 134).
ARTIFACT_ITER_SECONDS = MappingProxyType(
    {
        "BERT": 0.179,
        "DCGAN": 0.0469266931,
        "GPT2": 3.5714,
        "PointNet": 0.28125,
        "resnet50": 0.17540429367763434,
        "vgg19": 0.300610341,
    }
)
#: Per-iteration time tables: ``rounded`` (``ModelSpec.iter_seconds``) or ``artifact``.
ITER_TIME_TABLES = ("rounded", "artifact")


def iter_seconds(name: str, table: str = "rounded") -> float:
    """Serial per-iteration seconds of ``name`` from ``table`` (:data:`ITER_TIME_TABLES`)."""
    spec = model(name)
    if table == "rounded":
        return spec.iter_seconds
    if table == "artifact":
        return float(ARTIFACT_ITER_SECONDS[spec.name])
    raise DataError("iter_times", f"expected one of {', '.join(ITER_TIME_TABLES)}, got {table!r}")


def _norm(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "").replace(" ", "")


def model(name: str) -> ModelSpec:
    """The row of ``name`` (``ResNet-50``, ``resnet50`` and ``RESNET_50`` are the same model)."""
    if not isinstance(name, str):
        raise DataError("model", f"expected a model name, got {name!r}")
    key = _norm(name)
    for spec in MODELS.values():
        if _norm(spec.name) == key:
            return spec
    raise DataError("model", f"unknown model {name!r}; known: {', '.join(MODELS)}")


def model_class(name: str, mapping: str = "paper") -> str:
    """Application class of a model (``paper``: Table II; ``artifact``: four classes)."""
    return model(name).cls(mapping)


def locality_by_model(per_model: bool = True) -> dict[str, float]:
    """{model: L_across}: the per-model table, or the constant :data:`DEFAULT_LOCALITY` for every
    model."""
    return {n: (m.locality_penalty if per_model else DEFAULT_LOCALITY) for n, m in MODELS.items()}
