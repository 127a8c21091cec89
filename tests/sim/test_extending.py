"""docs/extending.md: every worked example runs (its python blocks, per section heading), and the
extension points behave as documented: objects give the same simulation as the names they mirror,
config and keyword overrides compose, bad objects and unknown names are named."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.core.errors import OptionError
from fairplace.instances.trace_generators import make_trace
from fairplace.sim import SimulationConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
SECTIONS = ("A scheduler", "A placement policy", "A T_id model")
# THEMIS workload 1's named small variant (8-24 jobs per app, an 8-hour window): ~100 jobs, well
# under a second a run; the paper scale gives ~400 jobs over 14 days and ~20 s a run
SMALL_TRACE = {"n_apps": 6, "scale": "small"}
SMALL = {"gpus": 32, "trace_options": SMALL_TRACE, "progress": False}


def python_blocks(heading: str) -> list[str]:
    """The ```python blocks under ``## heading`` (up to the next ``## ``); other sections (e.g. an
    appended back-end section) are not this test's business."""
    text = DOC.read_text()
    parts = re.split(r"^## +(.+?)\s*$", text, flags=re.M)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    assert heading in sections, f"docs/extending.md has no section '## {heading}'"
    return re.findall(r"```python\n(.*?)```", sections[heading], re.S)


@pytest.mark.parametrize("heading", SECTIONS)
def test_extending_example_runs(heading):
    blocks = python_blocks(heading)
    assert blocks
    ns: dict = {}
    for k, block in enumerate(blocks):
        exec(compile(block, f"{DOC.name}[{heading}][{k}]", "exec"), ns)
    res = ns["res"]
    assert res.summary["jobs"] > 0 and np.isfinite(res.jobs["finish"]).all()
    if heading == "A scheduler":
        # demand order, not FIFO: the example's scheduler is the one simulated
        assert res.config["scheduler"] == "fewest-gpus-first"
        assert not res.jobs["start"].equals(ns["fifo"].jobs["start"])
    elif heading == "A placement policy":
        assert res.config["placement"] == "lowest-index-first"
        assert res.config["placed_by"] == "policy"
    else:
        assert res.summary["rho_variant"] == "share-at-arrival"
        rho = res.apps["rho_share-at-arrival"].to_numpy()
        assert res.summary["max_rho"] == pytest.approx(rho.max())


def test_what_the_driver_checks_example_names_the_policy_and_the_rule():
    """docs/extending.md, "What the driver checks": the broken policy of the example is stopped with
    an ExtensionError naming it and the rule (a GPU given to two jobs)."""
    ns: dict = {}
    for k, block in enumerate(python_blocks("What the driver checks")):
        exec(compile(block, f"{DOC.name}[checks][{k}]", "exec"), ns)
    err = ns["err"]
    assert err.path == "placement"
    assert re.search(
        r"placement policy 'everyone-on-gpu-zero' gave GPU 0 to jobs \S+ and", str(err)
    )


def test_a_scheduler_object_matches_the_named_scheduler():
    """FIFO given as an object gives the schedule of the name ``fifo``."""
    from fairplace.sim.schedulers import FIFO

    by_name = fairplace.simulate("themis-1", "fifo", "pal", seed=2, **SMALL)
    by_object = fairplace.simulate("themis-1", FIFO(), "pal", seed=2, **SMALL)
    pd.testing.assert_frame_equal(by_name.jobs, by_object.jobs)


def test_a_policy_object_matches_the_named_policy():
    from fairplace.solvers.placement.policies import make_policy

    by_name = fairplace.simulate("themis-1", "fifo", "pm-first", seed=2, **SMALL)
    obj = make_policy("pm-first", seed=2, locality_penalty=1.7)
    by_object = fairplace.simulate("themis-1", "fifo", obj, seed=2, **SMALL)
    pd.testing.assert_frame_equal(by_name.jobs, by_object.jobs)
    assert by_object.config["placement"] == "pm-first"


def test_a_tid_model_reproduces_the_builtin_literal_variant():
    """THEMIS Eq. 1 as printed, T_id = W / min(R_C, d_max) x N_avg, written as a T_id model, gives
    the built-in ``literal`` rho of every job and app."""

    class Literal:
        name = "eq1"

        def ideal_time(self, e, gpus):
            return e["work"] / np.minimum(gpus, e["demand_max"]) * e["n_avg"]

    res = fairplace.simulate("themis-1", "fifo", "pal", seed=1, rho_variant=Literal(), **SMALL)
    for frame in (res.jobs, res.apps):
        np.testing.assert_allclose(frame["rho_eq1"], frame["rho_literal"], rtol=1e-12)
    assert res.summary["max_rho_eq1"] == pytest.approx(res.summary["max_rho_literal"])


def test_tid_model_errors_name_rho_variant():
    class Short:
        name = "short"

        def ideal_time(self, e, gpus):
            return np.ones(1)

    class Builtin(Short):
        name = "static"

        def ideal_time(self, e, gpus):
            return np.ones(len(e))

    for model in (Short(), Builtin(), object()):
        with pytest.raises(OptionError, match="rho_variant"):
            fairplace.simulate("themis-1", "fifo", "pal", rho_variant=model, **SMALL)


def test_config_and_overrides_compose_and_unknown_names_are_named():
    cfg = SimulationConfig(seed=2, **SMALL)
    a = fairplace.simulate("themis-1", "fifo", "pal", config=cfg)
    b = fairplace.simulate("themis-1", "fifo", "pal", seed=2, **SMALL)
    c = fairplace.simulate("themis-1", "fifo", "pal", config=cfg.with_overrides(seed=0), seed=2)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.jobs, c.jobs)
    with pytest.raises(OptionError, match="gpu_count"):
        fairplace.simulate("themis-1", "fifo", "pal", gpu_count=32)
    with pytest.raises(OptionError, match="^scheduler"):
        fairplace.simulate("themis-1", object(), "pal", **SMALL)
    with pytest.raises(OptionError, match="^placement"):
        fairplace.simulate("themis-1", "fifo", 42, **SMALL)
    with pytest.raises(OptionError, match="^binning"):
        SimulationConfig(binning="k-means")
    with pytest.raises(OptionError, match="^scheduler_options"):
        from fairplace.sim.schedulers import LAS

        fairplace.simulate("themis-1", LAS(), "pal", scheduler_options={"threshold": 1.0}, **SMALL)


def test_library_errors_name_parameters_not_flags():
    with pytest.raises(OptionError) as e:
        fairplace.simulate("workload-1", "fifo", "pal", gpus=30, progress=False)
    assert e.value.path == "gpus"
    with pytest.raises(OptionError) as e:
        fairplace.simulate("workload-1", "nope", "pal", progress=False)
    assert e.value.path == "scheduler"
    with pytest.raises(OptionError) as e:
        fairplace.simulate("workload-1", "fifo", "pal", profile="nope", progress=False)
    assert e.value.path == "profile"
    with pytest.raises(OptionError) as e:
        fairplace.simulate("themis-1", "fifo", "pal", trace_options={"bogus": 1}, progress=False)
    assert e.value.path == "trace_options.bogus"


def test_simulate_accepts_a_generated_trace_name_like_a_sweep():
    """``themis-1`` in simulate is the frame a sweep cell makes with the same seed and options."""
    by_name = fairplace.simulate("themis-1", "fifo", "pal", seed=3, **SMALL)
    frame, gen_kw = make_trace("themis-1", 3, {"gpus": 32, **SMALL_TRACE})
    assert gen_kw == SMALL_TRACE  # THEMIS workloads size jobs by base_gpus, not max_gpus
    by_frame = fairplace.simulate(frame, "fifo", "pal", seed=3, gpus=32, progress=False)
    pd.testing.assert_frame_equal(by_name.jobs, by_frame.jobs)
