"""Variability profiles, the Frontera table, the synthetic mixture and the Table II model table."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest

from fairplace.core.errors import DataError
from fairplace.instances import models, variability


def test_longhorn_profiles_normalised_per_uuid_median():
    for app, n in (("resnet50", 336), ("bert", 136), ("pagerank", 172)):
        s = variability.longhorn_profile(app)
        assert len(s) == n and s.index.is_unique
        assert 0.9 < s.median() < 1.1
    # ResNet-50 varies most, PageRank is flat (PAL §II-A)
    spread = {a: np.ptp(variability.longhorn_profile(a)) for a in variability.APPS}
    assert spread["resnet50"] > spread["bert"] > spread["pagerank"]


def test_per_run_profile_keeps_slow_runs():
    runs = variability.longhorn_profile("resnet50", per_run=True)
    assert len(runs) == 1404 and runs.max() > 3.5  # the ~3.5x of PAL section II-A
    assert variability.longhorn_profile("resnet50").max() < 1.2
    cl = variability.make_cluster("longhorn", 100, 4, per_run=True, seed=0)
    assert cl.pm_vector("A").max() > 1.5


def test_longhorn_profile_by_hand():
    csv = "uuid,perf\ng0,1\ng0,3\ng1,2\ng1,2\ng2,4\n"  # median perf 2 -> g0: median(0.5, 1.5) = 1.0
    s = variability.longhorn_profile("bert", source=io.StringIO(csv))
    assert s.to_dict() == {"g0": 1.0, "g1": 1.0, "g2": 2.0}


def test_sampling_without_and_with_replacement():
    a = variability.sample_pm_scores(100, seed=3)
    b = variability.sample_pm_scores(100, seed=3)
    assert set(a) == {"A", "B", "C"}
    for c in a:
        assert np.array_equal(a[c], b[c])
    assert np.unique(a["B"]).size == 100  # no GPU twice (BERT scores are distinct)
    with pytest.raises(DataError, match="with_replacement"):
        variability.sample_pm_scores(256)
    big = variability.sample_pm_scores(256, with_replacement=True, classes="artifact")
    assert set(big) == {"A", "B", "C", "D"} and np.array_equal(big["B"], big["C"])


def test_frontera_cluster_layout():
    cl = variability.frontera_cluster()
    assert len(cl) == 32 and len(cl.machines) == 8 and set(cl.classes) == {"A", "B", "C"}
    assert np.bincount(cl.machine_index).tolist() == [4] * 8
    assert cl.gpus[28].id == "m7/0" and cl.gpus[28].pm["A"] == pytest.approx(1.1098, abs=1e-4)
    art = variability.frontera_cluster("artifact")
    assert set(art.classes) == {"A", "B", "C", "D"}
    assert np.array_equal(art.pm_vector("D"), cl.pm_vector("C"))


def test_make_cluster_profiles():
    for profile in ("longhorn", "synthetic", "frontera"):
        cl = variability.make_cluster(profile, 4, 4, seed=1)
        assert len(cl) == 16 and len(cl.machines) == 4
        again = variability.make_cluster(profile, 4, 4, seed=1)
        assert np.array_equal(cl.pm_vector("A"), again.pm_vector("A"))
    # Frontera keeps whole machines: 8 x 4 without replacement is a permutation of the real machines
    fr = variability.make_cluster("frontera", 8, 4, seed=5)
    real = variability.frontera_cluster()
    assert sorted(fr.pm_vector("A")) == sorted(real.pm_vector("A"))
    with pytest.raises(DataError, match="machines"):
        variability.make_cluster("frontera", 9, 4)


def test_synthetic_shape_large():
    s = variability.synthetic_pm_scores(100_000, seed=0)
    for v in s.values():
        assert v.shape == (100_000,) and np.median(v) == pytest.approx(1.0)
        assert np.all(v > 0)
    # a tight body and a slow tail: ResNet-50 (A) has the heaviest tail
    tail = {c: np.quantile(v, 0.999) - 1 for c, v in s.items()}
    assert tail["A"] > tail["B"] and tail["A"] > 0.05
    assert np.mean(np.abs(s["A"] - 1) < 0.05) > 0.9


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: variability.longhorn_profile("sgemm"), "unknown Longhorn profile"),
        (lambda: variability.longhorn_profile("bert", source="/nonexistent/x.csv"), "not found"),
        (
            lambda: variability.longhorn_profile("bert", source=io.StringIO("uuid,time\na,1\n")),
            "perf",
        ),
        (
            lambda: variability.longhorn_profile("bert", source=io.StringIO("uuid,perf\na,x\n")),
            "positive",
        ),
        (lambda: variability.frontera_table(io.StringIO("GPU_ID,Node_ID\n0,0\n")), "Local_GPU_ID"),
        (lambda: variability.make_cluster("summit", 2, 2), "unknown variability profile"),
        (lambda: variability.make_cluster("longhorn", 0, 4), "machines"),
        (lambda: variability.sample_pm_scores(10, classes="four"), "class mapping"),
        (lambda: models.model("AlexNet"), "unknown model"),
        (lambda: models.model_class("BERT", "blox"), "class mapping"),
    ],
)
def test_bad_data_raises_data_error(call, match):
    with pytest.raises(DataError, match=match):
        call()


def test_model_table():
    assert set(models.MODELS) == {"PointNet", "vgg19", "DCGAN", "BERT", "resnet50", "GPT2"}
    assert models.model("ResNet-50") is models.MODELS["resnet50"]
    paper = {n: m.paper_class for n, m in models.MODELS.items()}
    assert paper == {
        "PointNet": "C",
        "vgg19": "A",
        "DCGAN": "A",
        "BERT": "B",
        "resnet50": "A",
        "GPT2": "B",
    }
    art = {n: models.model_class(n, "artifact") for n in models.MODELS}
    assert art["resnet50"] == "A" and art["vgg19"] == "C" and art["DCGAN"] == "B"
    assert art["PointNet"] == "D" and art["BERT"] == "B"
    assert models.model("gpt2").iter_seconds == pytest.approx(3.5714)
    assert models.model("DCGAN").iter_seconds == pytest.approx(0.0469)
    assert models.locality_by_model(per_model=False) == dict.fromkeys(models.MODELS, 1.7)
    assert (
        models.model("resnet50").locality_sensitive and not models.model("BERT").locality_sensitive
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        models.MODELS["BERT"].iter_seconds = 1.0  # type: ignore[misc]
