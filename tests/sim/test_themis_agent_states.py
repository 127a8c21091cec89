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
