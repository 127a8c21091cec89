"""The THEMIS experiments run their queue baselines fit-first (backfill): a job that does not fit is
skipped and the placement round goes on, as Tiresias' simulator ("scheduled in fit-first") and
Gavel's round mechanism ("If not, move onto next job") do. Without it a wide job at the head of the
queue holds back every job behind it."""

from __future__ import annotations

import pandas as pd
import pytest

import fairplace
from fairplace.runs.experiments import load_experiments

# one 4-GPU machine: "a" holds 2 GPUs for ~2,000 s, "wide" (4 GPUs) cannot start next to it,
# "small" (1 GPU) could
TRACE = pd.DataFrame(
    {
        "job_id": ["a", "wide", "small"],
        "num_gpus": [2, 4, 1],
        "submit_time": [0.0, 1.0, 2.0],
        "duration": [10_000, 100, 100],
        "model": ["resnet50"] * 3,
    }
)


def _start(scheduler: str, options: dict) -> dict[str, float]:
    res = fairplace.simulate(
        TRACE, scheduler, "packed-sticky", placement_options=options,
        gpus=4, gpus_per_machine=4, progress=False,
    )  # fmt: skip
    return dict(zip(res.jobs["job_id"], res.jobs["start"], strict=True))


@pytest.mark.parametrize("size", ["tiny", "quick", "full"])
def test_themis_sweeps_place_queue_baselines_fit_first(size):
    sweeps = {e.key: e.spec for e in load_experiments("themis", size) if e.kind == "sweep"}
    for key in ("contention", "network"):
        assert sweeps[key]["fixed"]["placement_options"] == {"backfill": True}, key


def test_fit_first_lets_a_small_job_pass_a_wide_one():
    """Tiresias' LAS: "wide" ranks ahead of "small" (same attained service, earlier arrival)."""
    (contention,) = [e for e in load_experiments("themis", "full") if e.key == "contention"]
    fit_first = _start("las", contention.spec["fixed"]["placement_options"])
    head_of_line = _start("las", {"backfill": False})
    assert fit_first["small"] == 300.0  # the first round after it arrives: next to "a"
    assert head_of_line["small"] > head_of_line["wide"] > 300.0  # waits behind "wide"
