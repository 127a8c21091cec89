"""Solver options: :class:`SolveOptions` (shared by every solver and back end) and
:class:`SolverEntry` (one solver on one instance kind, with the solver-specific options it takes)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_COUNT, MAX_SEED, check_value
from fairplace.core.registry import Entry
from fairplace.formulations.pa import ROUNDING_RULES

_REAL = numbers.Real
#: the type each option must have (bool is not accepted as a number, nor a number as a bool).
_TYPES = {
    "time_limit": _REAL,
    "mip_rel_gap": _REAL,
    "mip_abs_gap": _REAL,
    "threads": numbers.Integral,
    "random_seed": numbers.Integral,
    "presolve": bool,
    "verbose": bool,
    "parallel": bool,
    "mip_allow_restart": bool,
    "mip_max_nodes": numbers.Integral,
    "mip_pool_soft_limit": numbers.Integral,
    "presolve_mode": numbers.Integral,
    "mip_feasibility_jump": bool,
}

#: options whose None means "HiGHS' default"
_OPTIONAL = (
    "time_limit",
    "mip_allow_restart",
    "mip_max_nodes",
    "mip_pool_soft_limit",
    "presolve_mode",
    "mip_feasibility_jump",
)


@dataclass(frozen=True)
class SolveOptions:
    """How to solve: time limit (s, None = none), MIP gaps, threads, seed, presolve, log output.

    The gaps default to 1e-9 because partial-allocation payments divide two optima: HiGHS' default
    relative gap (1e-4) can under-estimate a leave-one-out optimum enough to give c_i > 1.
    """

    time_limit: float | None = None
    mip_rel_gap: float = 1e-9
    mip_abs_gap: float = 1e-9
    threads: int = 1
    random_seed: int = 0
    presolve: bool = True
    verbose: bool = False
    parallel: bool = True  # PA: run the leave-one-out solves on a thread pool
    #: HiGHS' MIP restarts (None = HiGHS' default). Off for auctions: on contended PF / leave-one-out
    #: solves, whose warm-start incumbent is often optimal, restarts repeat the root work (3x slower).
    mip_allow_restart: bool | None = None
    #: HiGHS' branch-and-bound node limit per MIP solve (None = none). A work limit, unlike
    #: ``time_limit`` independent of the machine's speed: a solve stopped by it reports status
    #: ``time_limit`` (best incumbent + bound), deterministically (tests use it).
    mip_max_nodes: int | None = None
    #: HiGHS' cut pool size (None = HiGHS' default, 10,000). Explicit-bid auctions use 50: their
    #: set-packing roots spend most of a leave-one-out solve separating thousands of cuts that are
    #: never used (16 apps x 64 GPUs, seeds 0-4: CPU time -46% on the worst seed, same optima).
    mip_pool_soft_limit: int | None = None
    #: HiGHS' presolve effort (None = HiGHS' default; 1 = the initial sweep only, 2 = light, 3 =
    #: full). The leave-one-out MILPs left after reduced-cost fixing use 1: on ~1,000 columns whose
    #: warm start is usually optimal, full presolve (probing) was half of each solve (216 such
    #: MILPs of 1,024 GPUs x 256 apps: 15-17 s with full presolve, 8-10 s with the sweep).
    presolve_mode: int | None = None
    #: HiGHS' feasibility-jump heuristic (None = HiGHS' default, on). Off where a warm start is
    #: given and usually optimal (the same 216 MILPs: a further ~1 s).
    mip_feasibility_jump: bool | None = None

    def __post_init__(self):
        for name, kind in _TYPES.items():
            v = getattr(self, name)
            if v is None and name in _OPTIONAL:
                continue
            if isinstance(v, bool) != (kind is bool) or not isinstance(v, kind):
                want = {bool: "true or false", numbers.Integral: "an integer"}.get(kind, "a number")
                raise OptionError(name, f"must be {want}, got {v!r}")
            if kind is not bool and not math.isfinite(v):  # type: ignore[arg-type]  # a number here
                raise OptionError(name, f"must be finite, got {v!r}")
        if self.random_seed < 0:
            raise OptionError("random_seed", f"must be >= 0, got {self.random_seed!r}")
        if self.time_limit is not None and (
            not math.isfinite(self.time_limit) or self.time_limit <= 0
        ):
            raise OptionError(
                "time_limit", f"must be a positive number of seconds, got {self.time_limit!r}"
            )
        for name in ("mip_rel_gap", "mip_abs_gap"):
            if getattr(self, name) < 0:
                raise OptionError(name, f"must be >= 0, got {getattr(self, name)!r}")
        if self.mip_max_nodes is not None and self.mip_max_nodes < 0:
            raise OptionError("mip_max_nodes", f"must be >= 0, got {self.mip_max_nodes!r}")
        if self.presolve_mode is not None and not 0 <= self.presolve_mode <= 3:
            raise OptionError("presolve_mode", f"must be 0, 1, 2 or 3, got {self.presolve_mode!r}")
        if not 1 <= self.threads <= 1024:
            raise OptionError("threads", f"must be in [1, 1024], got {self.threads!r}")

    def highs_options(self) -> dict:
        """The HiGHS option names and values these options set (shared by all three back ends)."""
        out = {
            "mip_rel_gap": float(self.mip_rel_gap),
            "mip_abs_gap": float(self.mip_abs_gap),
            "threads": int(self.threads),
            "random_seed": int(self.random_seed),
            "presolve": "on" if self.presolve else "off",
        }
        if self.mip_allow_restart is not None:
            out["mip_allow_restart"] = bool(self.mip_allow_restart)
        if self.mip_max_nodes is not None:
            out["mip_max_nodes"] = int(self.mip_max_nodes)
        if self.mip_pool_soft_limit is not None:
            out["mip_pool_soft_limit"] = int(self.mip_pool_soft_limit)
        if self.presolve_mode is not None:
            out["presolve_mode"] = int(self.presolve_mode)
        if self.mip_feasibility_jump is not None:
            out["mip_heuristic_run_feasibility_jump"] = bool(self.mip_feasibility_jump)
        return out

    def with_(self, **kw) -> SolveOptions:
        """These options with ``kw`` changed (``self`` when nothing changes: no copy to validate,
        as for every sub-solve of an auction without a time limit)."""
        same = self.__dataclass_fields__.keys() >= kw.keys() and all(
            type(getattr(self, k)) is type(v) and getattr(self, k) == v for k, v in kw.items()
        )
        if same:
            return self
        return replace(self, **kw)

    @classmethod
    def from_kwargs(cls, time_limit=None, **kw) -> SolveOptions:
        known = set(cls.__dataclass_fields__)
        unknown = set(kw) - known
        if unknown:
            raise OptionError(sorted(unknown)[0], f"unknown solver option; known: {sorted(known)}")
        return cls(time_limit=time_limit, **kw)


_BOOL = {"type": "boolean"}
#: value schemas of the solver-specific options (``core.limits.check_value``; the same rules a
#: JSON / TOML value would meet): checked by ``fairplace.solve`` before any solver runs
OPTION_SCHEMAS: dict[str, dict] = {
    "seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
    "rounding": {"enum": list(ROUNDING_RULES)},
    "payments": _BOOL,
    "tie_break": _BOOL,
    "bin": _BOOL,
    "backfill": _BOOL,
    "warm_start": _BOOL,
    "compute_exact": _BOOL,
    "exact_objective": {"type": ["number", "null"]},
    "n_min": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_COUNT},
}


def check_option_values(options: Mapping) -> None:
    """Raise :class:`OptionError` naming the first option whose value breaks
    :data:`OPTION_SCHEMAS` (``seed='x'``, ``seed=-5``, ``rounding=3``, ``payments='yes'``)."""
    for name, value in options.items():
        if name in OPTION_SCHEMAS:
            check_value(name, value, OPTION_SCHEMAS[name])


#: options every solver takes besides the SolveOptions fields: ``seed``, the seed of randomised rules
#: (lottery rounding, random policies, PM binning); a deterministic solver ignores it, so one loop
#: can run every solver with the same arguments
COMMON_OPTIONS = ("seed",)


@dataclass(frozen=True)
class SolverEntry(Entry):
    """One solver on one instance kind (a registry :class:`~fairplace.core.registry.Entry`):
    ``factory(instance, opts, name=..., **options) -> Solution`` and the solver-specific
    ``options`` it takes. Every solver also takes the :class:`SolveOptions` fields and
    :data:`COMMON_OPTIONS` (a solver ignores those it has no use for); anything else is an
    :class:`~fairplace.core.errors.OptionError` naming the option and the solver."""

    options: tuple[str, ...] = ()

    @property
    def fn(self) -> Callable:
        """The solve function (the entry's ``factory``)."""
        return self.factory

    def __call__(self, instance, opts: SolveOptions, **options):
        kept = {k: v for k, v in options.items() if k not in COMMON_OPTIONS or k in self.options}
        return self.fn(instance, opts, **kept)

    def reject_unknown(self, options: Mapping, solver: str, kind: str) -> None:
        """Raise :class:`OptionError` for the first option (sorted) this solver does not take
        (its values are checked by :func:`check_option_values`; the one ``check`` of an entry's
        options by name is :meth:`Registry.check <fairplace.core.registry.Registry.check>`)."""
        bad = sorted(set(options) - set(self.options) - set(COMMON_OPTIONS))
        if bad:
            takes = ", ".join(self.options) if self.options else "none"
            raise OptionError(
                bad[0],
                f"not an option of solver {solver!r} on {kind} instances "
                f"(its options: {takes}; and seed and the SolveOptions fields)",
            )
