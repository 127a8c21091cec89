"""THEMIS' agents describe every wanting app at every decision by a batched fast path
(``Agents.states``: the running jobs read in one NumPy pass, the current rho from their numbers
alone, the agent description and FTF model built when first read); each state must equal what
the formulations' own constructors and ``bundle_rho`` give for the same app, bitwise."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from fairplace.core.domain import AgentApp
from fairplace.formulations.agents import ftf_model
from fairplace.formulations.ftf import bundle_rho
from fairplace.instances.workloads import themis_workload
from fairplace.sim import simulate
from fairplace.sim.themis.agents import Agents
from fairplace.sim.themis.apps import running_jobs
from fairplace.sim.themis.outcome import AppState


def test_agent_states_equal_the_constructors_and_bundle_rho(monkeypatch):
    seen = {"states": 0, "priced": 0}
    batched = Agents.states

    def checked(self, apps, view, w, owner, before, room, cluster, running):
        out = batched(self, apps, view, w, owner, before, room, cluster, running)
        assert {a: r.tolist() for a, r in running.items()} == {
            a: r.tolist() for a, r in running_jobs(view, w).items()
        }
        for a, s in zip(apps, out, strict=True):
            app = AgentApp(**{f.name: getattr(s.app, f.name) for f in fields(AgentApp)})
            model = ftf_model(app, cluster, s.model.optimizer)
            had = np.flatnonzero(before == a)
            rho = bundle_rho(model, cluster, had, app.cls) if had.size else None
            want = AppState(
                app,
                held=tuple(cluster.ids(np.flatnonzero(owner == a))),
                rho=rho,
                room=int(room[a]),
                model=model,
                rho_spread=cluster.spread(had) if had.size else None,
            )
            assert type(s.rho) is type(rho) and s.rho == rho  # from the numbers alone
            assert isinstance(s, AppState) and s.id == app.id and s.described_at(view.t)
            assert all(getattr(s, f.name) == getattr(want, f.name) for f in fields(AppState))
            assert type(s.model.t_id) is type(model.t_id) and s.model.t_id == model.t_id
            seen["states"] += 1
            seen["priced"] += had.size > 0
        return out

    monkeypatch.setattr(Agents, "states", checked)
    tiny = themis_workload(
        2, scale="small", n_apps=4, base_gpus=16, jobs_range=(2, 4), task_gpu_hours=0.3, seed=3
    )
    res = simulate(tiny, "themis", "packed-sticky", progress=False)
    assert res.jobs["finish"].notna().all()
    assert seen["states"] > 20 and seen["priced"] > 5  # apps that held GPUs were priced too


def test_bids_from_the_agents_numbers_equal_the_models(monkeypatch):
    """Each bidder's compact app, its lease valuation and its rho on GPUs, priced from its numbers
    (``AgentState.pricer``: ``formulations.running_app``), equal what its FTF model gives, bitwise."""
    from dataclasses import replace

    from fairplace.formulations.compact import compact_app
    from fairplace.formulations.valuation import lease_table
    from fairplace.sim.themis import arbiter, bids

    seen = {"bids": 0, "leases": 0}

    def bid(cluster, s, offer, model=None):
        got = bids.bid(cluster, s, offer, model)
        assert s.pricer is not None and model is None
        want = compact_app(s.app, cluster, offer, s.room, s.model)
        np.testing.assert_array_equal(got.table.rho, want.table.rho)
        np.testing.assert_array_equal(got.table.levels, want.table.levels)
        assert replace(got, table=None) == replace(want, table=None)
        t, u = got.table, want.table
        assert (t.app_id, t.held_count, t.held_spread, t.held_level) == (
            u.app_id, u.held_count, u.held_spread, u.held_level,
        )  # fmt: skip
        held = bids.held_index(cluster, s)
        for n in range(1, 5):  # its rho on GPUs, and from now on on a share
            gpus = np.concatenate([held, offer[:n]])
            assert bids.state_rho(cluster, s, gpus) == s.model.rho(
                len(gpus), len(cluster), cluster.spread(gpus),
                float(cluster.pm_vector(s.cls)[gpus].max()),
            )  # fmt: skip
            assert bids.share_rho(cluster, s, n) == s.model.rho(n, len(cluster), 0, 1.0)
        seen["bids"] += 1
        return got

    def lease_bid(cluster, s, capp, lease, n, kind, model=None):
        got = bids.lease_bid(cluster, s, capp, lease, n, kind, model)
        want = lease_table(capp.table, s.model, len(cluster), lease, n, kind)
        np.testing.assert_array_equal(got.table.rho, want.rho)
        seen["leases"] += 1
        return got

    monkeypatch.setattr(arbiter, "bid", bid)
    monkeypatch.setattr(arbiter, "lease_bid", lease_bid)
    tiny = themis_workload(
        2, scale="small", n_apps=6, base_gpus=16, jobs_range=(2, 4), task_gpu_hours=0.3, seed=3
    )
    for opts in ({"f": 0.2}, {"f": 0.2, "pricing": "pm-score", "valuation": "lease-rho"}):
        res = simulate(tiny, "themis", "packed-sticky", progress=False, scheduler_options=opts)
        assert res.jobs["finish"].notna().all()
    assert seen["bids"] > 20 and seen["leases"] > 5
