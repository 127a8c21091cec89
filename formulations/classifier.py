"""PAL's application classifier (§III-A, Fig. 3): K-means over (DRAM_Util, PeakFU_Util) into ordered classes.

Each application is a point (DRAM utilisation, peak functional-unit utilisation), both on nsight
compute's 0..10 scale. K-means groups the points; the clusters are named A, B, C, ... by decreasing
compute intensity ``PeakFU - DRAM`` of their centroids, so A is the most compute-bound (and the most
variability-sensitive) class. :meth:`AppClassifier.predict` assigns a new application to the nearest
centroid.
"""

from __future__ import annotations

import string

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from fairplace.core.errors import DataError


class AppClassifier(ClassifierMixin, BaseEstimator):
    """K-means application classifier with classes ordered A = most compute-bound.

    Learned: ``centers_`` (K, 2) in class order, ``classes_`` (``['A', 'B', ...]``), ``labels_``.
    """

    def __init__(self, n_classes: int = 3, n_init: int = 10, random_state: int | None = 0):
        self.n_classes = n_classes
        self.n_init = n_init
        self.random_state = random_state

    @staticmethod
    def _points(X) -> np.ndarray:
        A = np.asarray(X, dtype=float)
        if A.ndim == 1 and A.size == 2:
            A = A[None, :]
        if A.ndim != 2 or A.shape[1] != 2 or A.shape[0] == 0 or not np.all(np.isfinite(A)):
            raise DataError("X", "expected finite (n_apps, 2) points (DRAM_Util, PeakFU_Util)")
        return A

    def fit(self, X, y=None):
        A = self._points(X)
        if not 1 <= self.n_classes <= min(len(A), 26):
            raise DataError("n_classes", f"need 1 <= n_classes <= {min(len(A), 26)}")
        with threadpool_limits(1):
            km = KMeans(self.n_classes, n_init=self.n_init, random_state=self.random_state).fit(A)
        intensity = km.cluster_centers_[:, 1] - km.cluster_centers_[:, 0]
        order = np.lexsort((km.cluster_centers_[:, 0], -intensity))  # most compute-bound first
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        self.centers_ = km.cluster_centers_[order]
        self.classes_ = np.array(list(string.ascii_uppercase[: self.n_classes]))
        self.labels_ = self.classes_[rank[km.labels_]]
        self.n_features_in_ = 2
        return self

    def predict(self, X) -> np.ndarray:
        """Class letter of each point: its nearest centroid."""
        A = self._points(X)
        d = ((A[:, None, :] - self.centers_[None, :, :]) ** 2).sum(-1)
        return self.classes_[d.argmin(1)]
