"""One colour per scheduler, placement and solver name in every figure the package draws (keyed by
name, never by the order a figure meets the names): :data:`PALETTE`, and :func:`colour` for any
other name (a stable colour from its hash). On the ground floor so that every layer that draws
reads it: ``fairplace.analysis.plots`` (which re-exports it), ``analysis.draws`` and
``SimulationResult.plot`` (the simulator's layer may not import analysis)."""

from __future__ import annotations

import zlib

#: the papers' schedulers, PAL's placements and the solvers, each its own colour
PALETTE: dict[str, str] = {
    # schedulers (THEMIS and its baselines, PAL's queue policies)
    "themis": "#1f77b4",
    "las": "#ff7f0e",
    "srtf": "#2ca02c",
    "gandiva": "#d62728",
    "optimus": "#9467bd",
    "slaq": "#8c564b",
    "drf": "#e377c2",
    "srpt-oracle": "#7f7f7f",
    "gavel-ftf": "#bcbd22",
    "fifo": "#17becf",
    # placements (PAL)
    "packed-sticky": "#4d4d4d",
    "packed-non-sticky": "#a6a6a6",
    "random-sticky": "#a6761d",
    "random-non-sticky": "#e6ab02",
    "pm-first": "#1b9e77",
    "pal": "#e7298a",
    # solvers
    "exact": "#000000",
    "relaxation": "#7570b3",
    "greedy-rho": "#66a61e",
    "greedy-log": "#d95f02",
    "lp-round": "#1f78b4",
}
#: colours for names outside :data:`PALETTE` (chosen by a hash of the name: stable across figures)
_OTHERS = (
    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#31a354", "#756bb1",
    "#636363", "#e6550d", "#9c9ede", "#cedb9c", "#e7ba52", "#e7969c", "#de9ed6", "#6baed6",
)  # fmt: skip
#: the columns whose values are names coloured by :data:`PALETTE`
NAMED = ("scheduler", "placement", "policy", "solver")


def colour(name) -> str:
    """The colour of ``name`` in every figure: :data:`PALETTE`'s, else a stable hashed one."""
    key = str(name)
    if key in PALETTE:
        return PALETTE[key]
    return _OTHERS[zlib.crc32(key.encode()) % len(_OTHERS)]


def colours(names) -> dict:
    """``{name: colour}`` for each of ``names`` (keys as given: a seaborn ``palette=``)."""
    return {n: colour(n) for n in names}
