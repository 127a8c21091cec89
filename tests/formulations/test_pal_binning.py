"""PM-score binning (PAL §III-B) and the application classifier (§III-A)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import silhouette_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from fairplace.core.errors import DataError
from fairplace.formulations.classifier import AppClassifier
from fairplace.formulations.pm_score import PMScoreBinner, bin_scores, silhouette_1d
from fairplace.instances.variability import frontera_cluster


def clusters(seed=0, n=300):
    rng = np.random.default_rng(seed)
    centers = rng.choice([0.95, 1.0, 1.2], size=n)
    return centers + rng.normal(0, 0.004, n)


def test_silhouette_picks_more_than_two_bins_on_clear_clusters():
    x = clusters()[:, None]
    sil = PMScoreBinner(random_state=0).fit(x)
    assert sil.k_[0] == 3 and sil.n_outliers_[0] == 0 and sil.silhouette_[0] > 0.9
    assert sil.bins_[0] == pytest.approx([0.95, 1.0, 1.2], abs=0.003)
    art = PMScoreBinner(k_rule="artifact", random_state=0).fit(x)
    assert art.k_[0] == 2 and art.bins_[0].size == 2  # K = 2 + #outliers, no outliers here


def test_outliers_keep_their_own_scores():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(1.0, 0.01, 200), [2.5, 3.1]])[:, None]
    b = PMScoreBinner(random_state=0).fit(x)
    assert b.n_outliers_[0] == 2
    y = b.transform(x)[:, 0]
    assert y[-2:].tolist() == [2.5, 3.1]
    assert np.all(np.abs(y[:-2] - 1.0) < 0.05)
    assert np.unique(y).size == b.k_[0] + 2
    # the artifact rule counts the same outliers into K and clusters everything together
    art = PMScoreBinner(k_rule="artifact", outlier_side="upper", random_state=0).fit(x)
    assert art.k_[0] == 4


def test_binner_is_a_deterministic_sklearn_estimator():
    x = np.column_stack([clusters(0), clusters(1)])
    a = PMScoreBinner(random_state=7).fit_transform(x)
    b = clone(PMScoreBinner(random_state=7)).fit(x).transform(x)
    assert np.array_equal(a, b) and a.shape == x.shape
    assert PMScoreBinner().get_params()["k_max"] == 11
    assert set(np.unique(a[:, 0])) <= set(PMScoreBinner(random_state=7).fit(x).bins_[0])


def test_large_input_subsamples_and_bins():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(1.0, 0.003, 20_000), rng.normal(1.1, 0.003, 5_000)])[:, None]
    b = PMScoreBinner(sample_size=500, random_state=0).fit(x)
    assert b.k_[0] == 2
    assert sorted(b.bins_[0][:2]) == pytest.approx([1.0, 1.1], abs=0.002)


def test_frontera_bins_golden():
    cl = frontera_cluster()
    scores, binner = bin_scores({c: cl.pm_vector(c) for c in "ABC"}, random_state=0)
    node = cl.machine_index
    A, B = cl.pm_vector("A"), cl.pm_vector("B")
    # A: machines 0-3, 5, 6 (~0.99-1.02), machine 4 (~1.057), machine 7 (~1.114); centroids = group means
    groups_a = [np.isin(node, [0, 1, 2, 3, 5, 6]), node == 4, node == 7]
    assert binner.bins_[0] == pytest.approx([A[g].mean() for g in groups_a], abs=1e-9)
    assert binner.bins_[0] == pytest.approx([1.0006, 1.0569, 1.1144], abs=1e-4)
    for g, v in zip(groups_a, binner.bins_[0], strict=True):
        assert np.all(scores["A"][g] == v)
    # B: machine 0 (~1.057) against the rest
    assert binner.bins_[1] == pytest.approx([B[node != 0].mean(), B[node == 0].mean()], abs=1e-9)
    assert binner.bins_[1] == pytest.approx([0.9995, 1.0571], abs=1e-4)
    assert np.flatnonzero(scores["B"] > 1.01).tolist() == [0, 1, 2, 3]
    # C (PageRank) is flat: many tight bins, all within 0.1% of the median
    assert binner.k_ == [3, 2, 8] and binner.n_outliers_ == [0, 0, 0]
    assert np.all(np.abs(scores["C"] - 1) < 1.5e-3)


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.sampled_from([0.9, 0.95, 1.0, 1.01, 1.2, 2.5]), min_size=3, max_size=60),
    k=st.integers(2, 5),
    seed=st.integers(0, 100),
)
def test_silhouette_1d_equals_sklearn(x, k, seed):
    x = np.array(x) + np.random.default_rng(seed).normal(0, 1e-3, len(x)) * (seed % 2)
    labels = np.random.default_rng(seed).integers(0, k, len(x))
    if np.unique(labels).size < 2 or np.unique(labels).size >= len(x):
        return
    # in 1-D |x - y| is the euclidean distance; sklearn's euclidean form (via dot products) loses
    # ~1e-8 on points 1e-3 apart, its manhattan form is exact
    expected = silhouette_score(x[:, None], labels, metric="manhattan")
    assert silhouette_1d(x, labels) == pytest.approx(expected, abs=1e-9)


def test_binner_bad_params():
    with pytest.raises(DataError, match="k_rule"):
        PMScoreBinner(k_rule="elbow").fit([[1.0], [2.0], [3.0]])
    with pytest.raises(DataError, match="X: .*NaN"):
        PMScoreBinner().fit([[1.0], [np.nan]])
    with pytest.raises(DataError, match="X: .*infinity"):
        PMScoreBinner().fit([[1.0], [np.inf]])
    with pytest.raises(DataError, match="X: .*0 sample"):
        PMScoreBinner().fit(np.empty((0, 2)))
    with pytest.raises(DataError, match="(?s)X: .*Reshape your data"):  # one class: x[:, None]
        PMScoreBinner().fit([1.0, 2.0, 3.0])
    with pytest.raises(DataError, match="X: .*features"):
        PMScoreBinner().fit(np.ones((5, 2))).transform(np.ones((5, 3)))
    with pytest.raises(NotFittedError):
        PMScoreBinner().transform(np.ones((5, 2)))


@pytest.mark.slow
@parametrize_with_checks(
    [PMScoreBinner(k_max=4, n_init=1), PMScoreBinner(k_rule="artifact", n_init=1)]
)
def test_binner_passes_sklearn_check_estimator(estimator, check):
    """Every scikit-learn estimator check passes; none is skipped by us (array-API input is skipped
    by scikit-learn itself unless SCIPY_ARRAY_API is set). A short K sweep keeps the checks fast;
    the input checks do not depend on it."""
    check(estimator)


def test_app_classifier_orders_classes_by_compute_intensity():
    rng = np.random.default_rng(0)
    compute = rng.normal([1.0, 8.0], 0.3, (10, 2))  # low DRAM, high FU: compute-bound
    mixed = rng.normal([4.0, 4.0], 0.3, (10, 2))
    memory = rng.normal([8.0, 1.5], 0.3, (10, 2))
    X = np.vstack([memory, compute, mixed])
    clf = AppClassifier(n_classes=3, random_state=0).fit(X)
    assert clf.labels_[:10].tolist() == ["C"] * 10
    assert clf.labels_[10:20].tolist() == ["A"] * 10
    assert clf.labels_[20:].tolist() == ["B"] * 10
    assert clf.predict([[0.5, 9.0], [9.0, 1.0], [4.2, 3.9]]).tolist() == ["A", "C", "B"]
    assert clf.predict([1.0, 8.0]).tolist() == ["A"]
    with pytest.raises(DataError):
        AppClassifier(n_classes=4).fit(X[:3])
    with pytest.raises(DataError):
        clf.predict([[1.0, 2.0, 3.0]])
