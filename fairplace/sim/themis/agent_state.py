"""The state of one app that THEMIS' AGENTs describe at a decision (:class:`AgentState`, built by
:meth:`fairplace.sim.themis.agents.Agents.state`): its agent description, FTF model and GPU ids
built on first read."""

from __future__ import annotations

import numpy as np

from fairplace.core.domain import AgentApp, Cluster
from fairplace.formulations.ftf import FTFModel
from fairplace.formulations.running_app import RunningApp

from .outcome import AppState


def filled_in(kind, /, **values):
    """``kind(**values)`` of a frozen dataclass without ``__post_init__``, given every field, filled
    in directly: its generated ``__init__`` sets each field through ``object.__setattr__``, and the
    agents build a state per wanting app and decision, a description, a model and its T_id per
    app described (as ``AgentJob.many`` does for the jobs)."""
    out = object.__new__(kind)
    out.__dict__.update(values)
    return out


class _Described:
    """A field of :class:`AgentState` built on first read (``k``: 0 its app, 1 its model): a
    non-data descriptor, so the values its instance keeps are read before it."""

    def __init__(self, k: int):
        self.k = k

    def __get__(self, obj, kind=None):
        return self if obj is None else obj._described()[self.k]


class _Held:
    """:attr:`AgentState.held`: the ids of the GPUs it holds, named from their indices on first
    read (the ranking and the bids read the indices: :meth:`AgentState.held_on`)."""

    def __get__(self, obj, kind=None):
        if obj is None:
            return self
        d = obj.__dict__
        d["held"] = out = tuple(d["_cluster"].ids(d["_held_idx"]))
        return out


class AgentState(AppState):
    """An :class:`AppState` whose agent description (``app``) and FTF model (``model``) are built
    when first read (:meth:`Agents.state`), and its GPU ids (``held``) too: the ranking, the
    leftover and the fill read an app's id, class, current rho, room and held GPUs only, so only
    the apps that bid or tie, and leftover recipients without a cached table, are described in
    full."""

    @property
    def id(self) -> str:
        d = self.__dict__
        return d["_id"] if "_id" in d else self.app.id

    @property
    def cls(self) -> str | None:
        d = self.__dict__
        return d["_cls"] if "_cls" in d else self.app.cls

    def described_at(self, t_now: float) -> bool:
        d = self.__dict__
        if "_t_now" in d:  # described (when read) at the decision's time with ``held``
            return d["_t_now"] == float(t_now)
        return super().described_at(t_now)

    def held_on(self, cluster: Cluster) -> np.ndarray | None:
        """The indices of ``held`` on ``cluster`` when it is the decision's (else None)."""
        d = self.__dict__
        return d["_held_idx"] if d.get("_cluster") is cluster else None

    held = _Held()
    app = _Described(0)
    model = _Described(1)

    @property
    def pricer(self) -> RunningApp | None:
        """The app priced from its numbers (:meth:`Agents._pricer`)."""
        return self.__dict__.get("_pricer")

    def _described(self) -> tuple[AgentApp, FTFModel]:
        """(app, model), built once: kept in the instance, where later reads find them first."""
        d = self.__dict__
        if "_describe" in d:
            d["app"], d["model"] = d.pop("_describe")()
        return d["app"], d["model"]
