"""Sweep inputs that are not plain ``simulate()`` arguments: clusters sampled from per-run profiles.
Generated traces (``themis-1``, ``themis-2``, ``synergy``) live in
:mod:`fairplace.instances.trace_generators`, which ``simulate`` reads too."""

from __future__ import annotations

from fairplace.instances.variability import make_cluster

#: sweep-level options that are not simulate() arguments: ``per_run = true`` builds the cluster from
#: the Longhorn per-run profile (``instances.variability.make_cluster(per_run=True)``, up to ~3.6x
#: the median) and passes it as ``cluster=``. ``simulate``'s default profile ``longhorn-runs`` does the
#: same sampling, so new specs need not set it.
SWEEP_OPTIONS = ("per_run",)


def per_run_cluster(kw: dict, seed: int) -> dict:
    """Replace gpus / gpus_per_machine / profile by a ``cluster`` sampled from per-run profiles."""

    gpm = int(kw.pop("gpus_per_machine", 4))
    gpus = int(kw.pop("gpus", 64))
    profile = kw.pop("profile", "longhorn")
    kw["cluster"] = make_cluster(profile, gpus // gpm, gpm, seed=seed, per_run=True)
    return kw
