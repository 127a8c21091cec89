"""Named simulation set-ups: one name fixes every modelling choice of a published experiment.

* ``pal-paper`` — PAL's paper (§IV-C, §V-B): per-run Longhorn PM-scores sampled per GPU without
  repetition (``longhorn-runs``), constant L = 1.7, fairplace's timing. These are ``simulate``'s
  defaults, so the set-up changes nothing; it names them.
* ``pal-artifact`` — the PAL artifact (hal-uw/blox-pal, branch ``artifact``) as it runs: its seeded
  cluster draw (``longhorn-artifact``, per-run rows with replacement, classes A-D), its K-means rule,
  no restart cost, 360 s rounds, constant L = 1.7, decision grid from t = 0, completions stamped at
  the end of their round, and its tie-breaks (PM-First: best match per score level; PAL: its order).

An argument the caller sets to a value other than ``simulate``'s default wins over the set-up.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MappingProxyType

from fairplace.core.errors import OptionError

SETUPS: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {
        "pal-paper": MappingProxyType({}),
        "pal-artifact": MappingProxyType(
            {
                "profile": "longhorn-artifact",
                "with_replacement": True,
                "classes": "artifact",
                "binning": "artifact",
                "checkpoint": 0.0,
                "restart": 0.0,
                "round_length": 360.0,
                "locality_penalty": 1.7,
                "locality_model": "constant",
                "grid_origin": "zero",
                "stamping": "round-end",
            }
        ),
    }
)
#: per placement policy, the tie-break option a set-up adds to ``placement_options``
SETUP_TIES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {"pal-artifact": MappingProxyType({"pal": "artifact", "pm-first": "level"})}
)


def apply_setup(setup: str, args: dict, fn) -> dict:
    """``args`` (``fn``'s keyword arguments) with the set-up's values wherever the caller kept the
    default; the set-up's tie-break joins ``placement_options`` unless the caller gave ``ties``."""
    if setup not in SETUPS:
        raise OptionError("setup", f"unknown set-up {setup!r}; known: {', '.join(SETUPS)}")
    defaults = {k: p.default for k, p in inspect.signature(fn).parameters.items()}
    out = dict(args)
    for k, v in SETUPS[setup].items():
        if out[k] == defaults[k]:
            out[k] = v
    ties = SETUP_TIES.get(setup, {}).get(str(out["placement"]))
    opts = dict(out.get("placement_options") or {})
    if ties is not None and "ties" not in opts:
        out["placement_options"] = {**opts, "ties": ties}
    return out
