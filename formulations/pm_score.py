"""PM-score binning (PAL §III-B, Fig. 5): per class, K-means groups GPUs of similar variability.

For each class (column of ``X``):

1. outliers: scores more than ``outlier_sigma`` standard deviations from the mean (``outlier_side``
   ``"both"``, or ``"upper"`` = only slow GPUs, as the artifact does);
2. ``k_rule="silhouette"`` (paper): K-means on the non-outliers for K = ``k_min``..``k_max``, keep the K
   with the highest silhouette score; each outlier keeps its own score as a bin of its own ("binned
   separately ... assigned their own PM-score equal to the GPU's normalized performance");
   ``outlier_bins="kmeans"`` instead sweeps K over the outliers too (the paper also says "we similarly
   determine an optimal K value for the set of outliers"; useful at 100,000 GPUs where ~2% are outliers);
   ``k_rule="artifact"``: K = 2 + number of outliers, one K-means over all GPUs (the artifact's early
   return makes its silhouette sweep always answer 2), sigma as the artifact measures it (pandas'
   sample standard deviation, ddof = 1; the paper's rule uses the population one);
3. a GPU's binned score is its bin's centroid.

Speed: the silhouette is computed exactly for 1-D data in O(K n log n) (:func:`silhouette_1d`); for more
than ``sample_size`` non-outlier GPUs the K sweep (K-means and silhouette) runs on a seeded random
subsample of ``sample_size`` GPUs; the final K-means with the chosen K
then uses every GPU, initialised from the subsample's centroids. K-means runs single-threaded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from fairplace.core.errors import DataError


class PMScoreBinner(TransformerMixin, BaseEstimator):
    """Bin per-class PM-scores with K-means (scikit-learn estimator; one column per class).

    ``X`` is 2-D (n_gpus, n_classes; one class: ``x[:, None]``), finite and non-empty; it passes
    scikit-learn's ``check_estimator`` (``tests/formulations/test_pal_binning.py``).

    Learned: ``bins_`` (per column, sorted bin scores), ``k_`` (K-means K per column, without the
    outlier bins), ``n_outliers_``, ``silhouette_`` (best silhouette per column, NaN if not swept).
    """

    def __init__(
        self,
        k_rule: str = "silhouette",
        k_min: int = 2,
        k_max: int = 11,
        outlier_sigma: float = 3.0,
        outlier_side: str = "both",
        outlier_bins: str = "own",
        sample_size: int = 2000,
        n_init: int = 4,
        random_state: int | None = 0,
    ):
        self.k_rule = k_rule
        self.k_min = k_min
        self.k_max = k_max
        self.outlier_sigma = outlier_sigma
        self.outlier_side = outlier_side
        self.outlier_bins = outlier_bins
        self.sample_size = sample_size
        self.n_init = n_init
        self.random_state = random_state

    def _check_params(self) -> None:
        if self.k_rule not in ("silhouette", "artifact"):
            raise DataError("k_rule", f"expected 'silhouette' or 'artifact', got {self.k_rule!r}")
        if self.outlier_side not in ("both", "upper"):
            raise DataError(
                "outlier_side", f"expected 'both' or 'upper', got {self.outlier_side!r}"
            )
        if self.outlier_bins not in ("own", "kmeans"):
            raise DataError(
                "outlier_bins", f"expected 'own' or 'kmeans', got {self.outlier_bins!r}"
            )
        if not 2 <= self.k_min <= self.k_max:
            raise DataError("k_min", f"need 2 <= k_min <= k_max, got {self.k_min}, {self.k_max}")

    def _data(self, X, reset: bool) -> np.ndarray:
        """``X`` as a finite, non-empty (n_gpus, n_classes) float array (scikit-learn's checks:
        2-D, no NaN/inf, no complex or sparse input, the fitted number of columns)."""
        try:
            return validate_data(self, X, reset=reset, dtype=np.float64)
        except ValueError as exc:  # DataError is a ValueError: scikit-learn's contract still holds
            raise DataError("X", str(exc)) from None

    def fit(self, X, y=None):
        """Learn the bins of every column of ``X`` (n_gpus, n_classes); ``y`` is ignored."""
        self._check_params()
        A = self._data(X, reset=True)
        rng = np.random.default_rng(self.random_state)
        fits = []
        for col in A.T:
            # one thread: OpenMP start-up dominates these small 1-D fits (10-30x slower on 2 cores)
            with threadpool_limits(1):
                fits.append(self._fit_column(col, rng))
        self.bins_, self.k_, self.n_outliers_, self.silhouette_ = (
            list(v) for v in zip(*fits, strict=True)
        )
        return self

    def transform(self, X) -> np.ndarray:
        """Each score replaced by the nearest bin score of its column (same shape as ``X``)."""
        check_is_fitted(self, "bins_")
        A = self._data(X, reset=False)
        out = np.empty_like(A)
        for j, col in enumerate(A.T):
            b = self.bins_[j]
            pos = np.clip(np.searchsorted(b, col), 1, max(b.size - 1, 1))
            lo, hi = b[pos - 1], b[np.minimum(pos, b.size - 1)]
            out[:, j] = np.where(np.abs(col - lo) <= np.abs(hi - col), lo, hi)
        return out

    def _outliers(self, x: np.ndarray) -> np.ndarray:
        sd = x.std(ddof=1 if self.k_rule == "artifact" and x.size > 1 else 0)
        if sd == 0:
            return np.zeros(x.size, bool)
        z = (x - x.mean()) / sd
        return (
            (z > self.outlier_sigma)
            if self.outlier_side == "upper"
            else (np.abs(z) > self.outlier_sigma)
        )

    def _kmeans(self, x: np.ndarray, k: int, rng, init=None) -> KMeans:
        km = KMeans(
            n_clusters=k,
            init="k-means++" if init is None else np.sort(init)[:, None],
            n_init=self.n_init if init is None else 1,
            random_state=int(rng.integers(2**31 - 1)),
        )
        return km.fit(x[:, None])

    def _fit_column(self, x: np.ndarray, rng):
        out = self._outliers(x)
        if self.k_rule == "artifact":
            k = min(2 + int(out.sum()), np.unique(x).size)
            km = self._kmeans(x, k, rng) if k > 1 else None
            bins = np.unique(km.cluster_centers_.ravel()) if km is not None else np.unique(x)
            return bins, k, int(out.sum()), float("nan")
        body = x[~out]
        centers, k, sil = self._sweep(body, rng)
        tail = x[out]
        if self.outlier_bins == "kmeans" and tail.size:
            tail = self._sweep(tail, rng)[0]
        return np.unique(np.concatenate([centers, tail])), k, int(out.sum()), sil

    def _sweep(self, values: np.ndarray, rng) -> tuple[np.ndarray, int, float]:
        """K-means centroids with K chosen by silhouette over k_min..k_max (subsampled if large)."""
        distinct = np.unique(values)
        if distinct.size - 1 < self.k_min:  # too few distinct values: each value is a bin
            return distinct, distinct.size, float("nan")
        sample = values
        if values.size > self.sample_size:
            sample = rng.choice(values, size=self.sample_size, replace=False)
        best: tuple[float, int | None, Any] = (-np.inf, None, None)  # (silhouette, K, centres)
        for k in range(self.k_min, min(self.k_max, np.unique(sample).size - 1) + 1):
            km = self._kmeans(sample, k, rng)
            s = silhouette_1d(sample, km.labels_)
            if s > best[0] + 1e-12:
                best = (s, k, km.cluster_centers_.ravel())
        sil, k_best, centers = best
        if k_best is None:
            return distinct, distinct.size, float("nan")
        if sample is not values:
            centers = self._kmeans(values, k_best, rng, init=centers).cluster_centers_.ravel()
        return np.sort(centers), k_best, float(sil)


def silhouette_1d(x, labels) -> float:
    """Mean silhouette coefficient of 1-D points, exact, in O(K n log n) with sorted prefix sums.

    Same value as ``sklearn.metrics.silhouette_score(x[:, None], labels)`` (which is O(n^2)):
    s_i = (b_i - a_i) / max(a_i, b_i), a_i the mean distance to the rest of i's cluster, b_i the least
    mean distance to another cluster; s_i = 0 in a singleton cluster.
    """
    x = np.asarray(x, dtype=float)
    labels = np.asarray(labels)
    ks, inv = np.unique(labels, return_inverse=True)
    n_k = np.bincount(inv, minlength=ks.size)
    mean_to = np.empty((ks.size, x.size))  # mean |x_i - y| over y in cluster k (self included)
    for k in range(ks.size):
        S = np.sort(x[inv == k])
        P = np.concatenate([[0.0], np.cumsum(S)])
        c = np.searchsorted(S, x)
        total = x * c - P[c] + (P[-1] - P[c]) - x * (S.size - c)
        mean_to[k] = total / S.size
    own = n_k[inv]
    a = mean_to[inv, np.arange(x.size)] * own / np.maximum(own - 1, 1)
    mean_to[inv, np.arange(x.size)] = np.inf
    b = mean_to.min(axis=0)
    denom = np.maximum(a, b)
    s = np.where((own > 1) & (denom > 0), (b - a) / np.where(denom > 0, denom, 1.0), 0.0)
    return float(s.mean())


def bin_scores(
    scores: dict[str, np.ndarray], **params
) -> tuple[dict[str, np.ndarray], PMScoreBinner]:
    """Bin a {class: scores} mapping with one :class:`PMScoreBinner` (columns in the mapping's order)."""
    classes = list(scores)
    if not classes:
        return {}, PMScoreBinner(**params)
    X = np.column_stack([np.asarray(scores[c], dtype=float) for c in classes])
    binner = PMScoreBinner(**params)
    Y = binner.fit_transform(X)
    return {c: Y[:, j] for j, c in enumerate(classes)}, binner
