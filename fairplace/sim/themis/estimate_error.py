"""Errors in the AGENTs' rho estimates (THEMIS §6.3, "Error analysis", Fig. 17): what the ARBITER
sees when the apps misjudge their remaining time. The truth stays for the metrics.

rho(G) = (elapsed + T_rem(G)) / T_id (Eq. 1 / Eq. 2). The AGENT knows ``elapsed`` exactly; it
estimates T_rem from iter_left, the serial iteration time and the slowdown S(G), each a factor of
T_rem (Eq. 1: iter_left x t_iter x S(G) / n). An error e in them reports

    rho_hat(G) = e0 + k (rho(G) - e0),   e0 = elapsed / T_id,   k = 1 + e > 0

(an unbounded rho stays unbounded; k = 1 leaves the value as it is). A factor on the whole table
would change nothing: PF maximises sum_i log 1/rho_i, so a per-app constant drops out of the
argmax and of every c_i ratio; only the elapsed share e0 lets an estimate error move the auction.
The ranking (step 1: "the ARBITER asks all apps for current finish-time fair metric estimates")
reads the reported current rho too. ``kind``:

* ``random`` (the paper: "percentage error is sampled at random from [-X, X] per app"): one k per
  app, uniform in [1 - X, 1 + X], drawn once from (seed, app id) and kept for the app's life;
* ``random-round``: a new k per app and auction (errors that do not persist);
* ``strategic``: every app exaggerates its placement preference by X, the lie of §6.3's
  truth-telling experiment (Fig. 18: "over-reports slowdown for staggered placement or
  under-reports slowdown for dense placement by X%") told by all apps: k = 1 - X for GPUs on one
  machine (spread 0), 1 + X across machines or racks (spread 1, 2).

``liar`` (an app id; None: every app) makes that app the only one whose estimates err: §6.3's one
strategically lying app among truthful ones (``kind="strategic"``). Every other app's bids and
current rho are passed on as they are (the same objects).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from fairplace.core.domain import Cluster, spread
from fairplace.core.errors import OptionError
from fairplace.formulations.agents import ftf_model

from .bids import held_index

#: how the AGENTs' estimates err (module doc)
ERROR_KINDS = ("random", "random-round", "strategic")


@lru_cache(maxsize=65536)
def _uniform(seed: int, app_id: str, round_seed: int) -> float:
    """A seeded draw in [0, 1) per (seed, app id[, round]): deterministic, independent of order."""
    key = [int(seed), zlib.crc32(app_id.encode()), int(round_seed)]
    return float(np.random.default_rng(key).random())


def misreport(rho: np.ndarray, e0: float, k) -> np.ndarray:
    """rho_hat = e0 + k (rho - e0) elementwise (``k`` a scalar, or one factor per spread on the
    spread axis, axis 1 of a (n, 3, levels) rho table); inf stays inf. A new array."""
    rho = np.asarray(rho, float)
    k = np.asarray(k, float)
    if k.ndim == 1:  # per spread: broadcast on axis 1
        k = k.reshape((1, -1) + (1,) * (rho.ndim - 2))
    with np.errstate(invalid="ignore"):
        out = e0 + k * (rho - e0)
    return np.where(np.isinf(rho), rho, out)


@dataclass(frozen=True)
class RhoError:
    """Errors of size ``x`` (a fraction: 0.2 = ±20%) of ``kind`` in every AGENT's estimates."""

    x: float = 0.0
    kind: str = "random"
    seed: int = 0
    liar: str | None = None  # the only app that errs (§6.3's liar); None: every app

    def __post_init__(self):
        x = self.x
        if isinstance(x, bool) or not isinstance(x, int | float) or not 0.0 <= x < 1.0:
            raise OptionError("scheduler_options.rho_error", f"must be in [0, 1), got {x!r}")
        object.__setattr__(self, "x", float(x))
        if self.kind not in ERROR_KINDS:
            raise OptionError(
                "scheduler_options.rho_error_kind",
                f"expected one of {ERROR_KINDS}, got {self.kind!r}",
            )
        if self.liar is not None and (not isinstance(self.liar, str) or not self.liar):
            raise OptionError(
                "scheduler_options.liar", f"must be an app id (a name) or None, got {self.liar!r}"
            )

    def errs(self, app_id: str) -> bool:
        """True if ``app_id``'s estimates err: every app's, or the liar's alone."""
        return self.liar is None or app_id == self.liar

    def factors(self, app_id: str, round_seed: int = 0) -> np.ndarray:
        """k per spread (0: one machine, 1: one rack, 2: racks) for ``app_id`` in this round."""
        if self.kind == "strategic":
            return np.array([1.0 - self.x, 1.0 + self.x, 1.0 + self.x])
        r = round_seed if self.kind == "random-round" else 0
        k = 1.0 + self.x * (2.0 * _uniform(self.seed, app_id, r) - 1.0)
        return np.full(3, k)

    @staticmethod
    def elapsed_share(cluster: Cluster, state) -> float:
        """e0 = elapsed / T_id of an :class:`~fairplace.sim.themis.arbiter.AppState` (its FTF model)."""
        model = state.model if state.model is not None else ftf_model(state.app, cluster)
        return float(model.elapsed) / model.ideal(len(cluster))

    def table(self, table, e0: float, k: np.ndarray):
        """A :class:`~fairplace.formulations.agents.RhoTable` as reported (the same when X = 0)."""
        if self.x == 0.0:
            return table
        return replace(table, rho=misreport(table.rho, e0, k))

    def bids(self, cluster: Cluster, part: Sequence, capps: tuple, round_seed: int) -> tuple:
        """The bidders' compact apps with their rho tables as reported (``part``: their states)."""
        if self.x == 0.0:
            return capps
        return tuple(
            replace(
                c,
                table=self.table(
                    c.table, self.elapsed_share(cluster, s), self.factors(s.app.id, round_seed)
                ),
            )
            if self.errs(s.app.id)
            else c
            for s, c in zip(part, capps, strict=True)
        )

    def reported(
        self, cluster: Cluster, states: Sequence, round_seed: int, rho_now: Callable
    ) -> list:
        """The states with their current rho as reported for the ranking (``rho_now(cluster, s)``:
        the true current rho); an app holding nothing (rho unbounded) reports inf."""
        if self.x == 0.0:
            return list(states)
        out = []
        for s in states:
            if not self.errs(s.app.id):
                out.append(s)
                continue
            r = rho_now(cluster, s)
            if not np.isinf(r):
                held = held_index(cluster, s)
                sp = spread(cluster.machine_index, cluster.rack_index, held) if held.size else 0
                sp = sp if s.rho_spread is None else s.rho_spread  # the GPUs rho was priced on
                k = self.factors(s.app.id, round_seed)[sp]
                r = float(misreport(np.asarray(r), self.elapsed_share(cluster, s), k))
            out.append(replace(s, rho=r))
        return out
