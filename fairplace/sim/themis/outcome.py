"""The records of one THEMIS round (``arbiter.py``): what the driver knows of each active app
(:class:`AppState`) and the round's decisions (:class:`RoundOutcome`), on GPU ids or on cluster
indices."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast

from fairplace.core.domain import AgentApp, Cluster
from fairplace.formulations.agents import RhoTable
from fairplace.formulations.ftf import FTFModel
from fairplace.formulations.running_app import RunningApp


@dataclass(frozen=True)
class AppState:
    """An active app at the event: its agent description, the GPUs it holds, optionally its current
    rho as the driver knows it (otherwise computed from Eq. 1 / Eq. 2 at ``t_now``)."""

    app: AgentApp
    held: tuple[str, ...] = ()
    rho: float | None = None
    room: int | None = None  # GPUs it can use beyond ``held`` (None: its demand cap minus held)
    model: FTFModel | None = None  # ``ftf_model(app, cluster)`` when the driver has built it
    rho_spread: int | None = None  # spread of the GPUs ``rho`` was priced on (None: ``held``'s)

    @property
    def id(self) -> str:
        """The app's id (``app.id``)."""
        return self.app.id

    @property
    def cls(self) -> str | None:
        """The app's application class (``app.cls``)."""
        return self.app.cls

    @property
    def pricer(self) -> RunningApp | None:
        """The app priced from its numbers alone (the simulator's agents), else None: priced from
        ``model`` / ``app`` (:mod:`fairplace.sim.themis.bids`)."""
        return None

    def described_at(self, t_now: float) -> bool:
        """Whether ``app`` describes the app at ``t_now`` holding ``held`` (else the arbiter
        describes it again at ``t_now``)."""
        return self.app.t_now == float(t_now) and self.app.held == tuple(self.held)


#: how a round names GPUs: ids (``str``, :meth:`Arbiter.auction_round`) or cluster indices (``int``)
GpuT = TypeVar("GpuT", str, int)


@dataclass(frozen=True)
class RoundOutcome(Generic[GpuT]):
    """Decisions of one round per app id: GPU ids (:meth:`Arbiter.auction_round`) or cluster
    indices (:meth:`Arbiter.round_on_offer`; :meth:`named` makes the ids)."""

    allocation: dict[str, list[GpuT]]  # everything granted this round (auction + leftover)
    auction: dict[str, list[GpuT]]  # the PA allocation of the participants
    pf_allocation: dict[str, list[GpuT]]
    payments: dict[str, float]
    leftover_given: dict[str, list[GpuT]]  # leftover GPUs per non-participant
    unallocated: list[GpuT]  # offered GPUs nobody took
    participants: list[str]
    ranking: list[tuple[str, float]]  # (app id, current rho), worst first
    lease_expiry: float
    tables: dict[str, RhoTable] = field(default_factory=dict)
    rho_after: dict[str, float] = field(default_factory=dict)
    status: str = "optimal"
    filled: dict[str, list[GpuT]] = field(default_factory=dict)  # step 5: GPUs nobody else took
    bid_seconds: float = 0.0  # the bidders' rho tables (AGENTs, §6.2.3), all bidders together
    arbiter_seconds: float = 0.0  # the rest of the round: ranking, PA, leftover, fill

    def named(self: RoundOutcome[int], cluster: Cluster) -> RoundOutcome[str]:
        """The same decisions with GPU indices of ``cluster`` as its GPU ids."""

        def ids(by_app: dict[str, list[int]]) -> dict[str, list[str]]:
            return {a: cluster.ids(g) for a, g in by_app.items()}

        by_id: dict[str, Any] = {
            k: ids(getattr(self, k))
            for k in ("allocation", "auction", "pf_allocation", "leftover_given", "filled")
        }
        by_id["unallocated"] = cluster.ids(self.unallocated)
        out = replace(self, **by_id)
        return cast("RoundOutcome[str]", out)
