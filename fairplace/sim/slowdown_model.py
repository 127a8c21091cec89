"""The driver's runtime model: a running job's slowdown S_j(G) = L_j(spread(G)) * max_{g in G}
V_raw,class(j)(g) on the raw PM-scores (PAL Eq. 1; its rate is 1 / (t_iter * S_j(G)),
:mod:`.engine`), job by job or for many jobs at once (same numbers)."""

from __future__ import annotations

from itertools import chain

import numpy as np

from fairplace.core.domain import slowdown, spread

from .workload import Workload

__all__ = ["SlowdownModel"]


class SlowdownModel:
    """The slowdowns of :class:`.engine.Driver` (a base class of it): read its workload ``w``, the
    raw scores per class (``raw``; ``raw_rows``, one row per class, ``cls_row`` each job's row) and
    each GPU's machine and rack (``mi``, ``ri``)."""

    w: Workload
    raw: dict
    raw_rows: np.ndarray
    cls_row: np.ndarray
    mi: np.ndarray
    ri: np.ndarray

    def slowdown(self, j: int, idx: np.ndarray) -> float:
        """S_j(G) = L_j(spread(G)) * max_{g in G} V_raw,class(j)(g) (:func:`fairplace.core.domain.slowdown`)."""
        w, idx = self.w, np.asarray(idx, np.int64)
        return slowdown(
            (1.0, w.l_machine[j], w.l_rack[j]),
            spread(self.mi, self.ri, idx),
            self.raw[w.cls[j]][idx],
        )

    def slowdowns(self, c: np.ndarray, gpus: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(GPUs held, S_j(G)) of jobs ``c`` on their GPU arrays ``gpus`` (non-empty) at once: the
        same numbers as :meth:`slowdown` job by job (spread from the min and max machine and rack
        of each bundle, max V by segments)."""
        k = np.fromiter(map(len, gpus), np.int64, len(gpus))
        if isinstance(gpus[0], np.ndarray):
            flat = np.concatenate(gpus).astype(np.int64, copy=False)
        else:  # tuples of ints: one pass, not an array per job
            flat = np.fromiter(chain.from_iterable(gpus), np.int64, int(k.sum()))
        return k, self._slowdowns(c, k, flat)

    def _slowdowns(self, c: np.ndarray, k: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """S_j(G) of jobs ``c`` holding ``k`` GPUs each, ``flat`` their GPUs job after job
        (:meth:`slowdowns`)."""
        if flat.size == k.size:  # single GPUs only: on one machine (L = 1), V of that GPU
            return self.raw_rows[self.cls_row[c], flat]
        at = np.cumsum(k) - k
        m, r = self.mi[flat], self.ri[flat]
        one_m = np.minimum.reduceat(m, at) == np.maximum.reduceat(m, at)
        one_r = np.minimum.reduceat(r, at) == np.maximum.reduceat(r, at)
        L = np.where(one_m, 1.0, np.where(one_r, self.w.l_machine[c], self.w.l_rack[c]))
        vmax = np.maximum.reduceat(self.raw_rows[np.repeat(self.cls_row[c], k), flat], at)
        return L * vmax
