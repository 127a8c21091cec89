"""Benchmarks for ``fairplace bench``: one module per area, each exposing ``CASES``, a
:class:`~fairplace.core.registry.Registry` of its cases (:func:`cases`); ``benchmarks/registry.py``
merges them into one, :data:`~fairplace.benchmarks.registry.BENCH_REGISTRY`, built once at import.

A case's ``run(quick: bool) -> dict`` returns at least ``{"seconds": float, "sizes": {...}}``, the
sizes it actually ran, read off the instance it built. A name states sizes
(``auction_pa_compact_1024x256``: 1,024 GPUs, 256 apps); the case declares them (``Case.sizes``) and
``fairplace bench`` reports a run that ran other sizes as an error, so a result never claims a size
it did not run. ``--quick`` (:data:`QUICK`, every case's one option) keeps every size and runs fewer
repetitions (or seeds, or offers, as each case says in its result); a case too long for that is
skipped with its reason (``Case.full_only``). Speed targets live here, never in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from fairplace.core.params import Boolean, Param
from fairplace.core.registry import Entry, Registry

#: ``--quick``: the same sizes with fewer repetitions (every bench case's one option)
QUICK = Param(
    "quick",
    False,
    Boolean(),
    "the same sizes with fewer repetitions; cases too long for that are skipped, saying so",
    flag="--quick",
)


@dataclass(frozen=True)
class Case:
    """One benchmark: ``run(quick) -> dict``, its target seconds (None: no target), the sizes its
    name states, and why ``--quick`` skips it (None: it runs, at the same sizes)."""

    run: Callable[[bool], dict]
    target: float | None = None
    sizes: dict = field(default_factory=dict)
    full_only: str | None = None


def _runner(case: Case) -> Callable[..., dict]:
    def run(quick: bool = False) -> dict:
        return case.run(quick)

    return run


def cases(module: str, table: Mapping[str, Case]) -> Registry:
    """The bench cases of ``module`` (its ``__name__``) as a Registry: a name's entry runs its case
    (option :data:`QUICK`); its capabilities are the :class:`Case` (``case``) and the module's
    short name (``module``)."""
    short = module.rsplit(".", 1)[-1]
    return Registry(
        "bench case",
        {
            name: Entry(
                _runner(case),
                (),
                f"target {case.target} s" if case.target is not None else "no target",
                (QUICK,),
                {"case": case, "module": short},
            )
            for name, case in table.items()
        },
        where="--only",
    )


def merged(*registries: Registry) -> Registry:
    """One registry of bench cases from the modules' ``CASES``; a name given twice is a ValueError."""
    entries: dict[str, Entry] = {}
    for reg in registries:
        for name, entry in reg.items():
            if name in entries:
                raise ValueError(f"bench case {name!r} is in two modules")
            entries[name] = entry
    return Registry("bench case", entries, where="--only")


def as_case(entry: Entry) -> Case:
    """The :class:`Case` of a bench registry's entry."""
    return entry.capabilities["case"]
