"""Solver options: :class:`SolveOptions` (shared by every solver and back end) and
:class:`SolverEntry` (one solver on one instance kind, with the specs of the solver-specific options
it takes: ``solvers/solver_params.py``, shared where an option name means the same thing)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_SEED
from fairplace.core.params import Boolean, Interval, Options, Param
from fairplace.core.registry import Entry
from fairplace.formulations.pa import ROUNDING_RULES

_N = Interval(0, None, integer=True)  # a count or seed: an integer >= 0
#: one spec per :class:`SolveOptions` field, in field order: the defaults, the check, the JSON
#: Schema and the CLI help (``--time-limit``) are read from them. Bools are not numbers here, nor
#: numbers bools; None means "no limit" or "HiGHS' default" where a field is nullable.
SOLVE_PARAMS: tuple[Param, ...] = (
    Param(
        "time_limit",
        None,
        Interval(0.0, None, closed="neither"),
        "seconds for the whole solve (None: no limit); returns the best incumbent",
        flag="--time-limit",
        nullable=True,
    ),
    Param("mip_rel_gap", 1e-9, Interval(0.0, None), "HiGHS' relative MIP gap"),
    Param("mip_abs_gap", 1e-9, Interval(0.0, None), "HiGHS' absolute MIP gap"),
    Param("threads", 1, Interval(1, 1024, integer=True), "HiGHS' threads per solve"),
    Param("random_seed", 0, _N, "HiGHS' random seed"),
    Param("presolve", True, Boolean(), "HiGHS' presolve on or off"),
    Param("verbose", False, Boolean(), "print the solver's log"),
    Param("parallel", True, Boolean(), "PA: run the leave-one-out solves on a thread pool"),
    Param(
        "mip_allow_restart",
        None,
        Boolean(),
        "HiGHS' MIP restarts (None: its default)",
        nullable=True,
    ),
    Param(
        "mip_max_nodes",
        None,
        _N,
        "HiGHS' branch-and-bound node limit per MIP solve (None: none)",
        nullable=True,
    ),
    Param(
        "mip_pool_soft_limit",
        None,
        Interval(None, None, integer=True),
        "HiGHS' cut pool size (None: its default, 10,000)",
        nullable=True,
    ),
    Param(
        "presolve_mode",
        None,
        Interval(0, 3, integer=True),
        "HiGHS' presolve effort: 1 the initial sweep, 2 light, 3 full (None: its default)",
        nullable=True,
    ),
    Param(
        "mip_feasibility_jump",
        None,
        Boolean(),
        "HiGHS' feasibility-jump heuristic (None: its default, on)",
        nullable=True,
    ),
)
#: the specs by field name
SOLVE_PARAM = {p.name: p for p in SOLVE_PARAMS}
#: the one spec of ``time_limit`` (``fairplace solve`` / ``fairplace batch`` ``--time-limit``)
TIME_LIMIT = SOLVE_PARAM["time_limit"]


@dataclass(frozen=True)
class SolveOptions:
    """How to solve: time limit (s, None = none), MIP gaps, threads, seed, presolve, log output.

    The gaps default to 1e-9 because partial-allocation payments divide two optima: HiGHS' default
    relative gap (1e-4) can under-estimate a leave-one-out optimum enough to give c_i > 1.
    """

    time_limit: float | None = SOLVE_PARAM["time_limit"].default
    mip_rel_gap: float = SOLVE_PARAM["mip_rel_gap"].default
    mip_abs_gap: float = SOLVE_PARAM["mip_abs_gap"].default
    threads: int = SOLVE_PARAM["threads"].default
    random_seed: int = SOLVE_PARAM["random_seed"].default
    presolve: bool = SOLVE_PARAM["presolve"].default
    verbose: bool = SOLVE_PARAM["verbose"].default
    parallel: bool = SOLVE_PARAM["parallel"].default
    #: HiGHS' MIP restarts (None = HiGHS' default). Off for auctions: on contended PF / leave-one-out
    #: solves, whose warm-start incumbent is often optimal, restarts repeat the root work (3x slower).
    mip_allow_restart: bool | None = SOLVE_PARAM["mip_allow_restart"].default
    #: HiGHS' branch-and-bound node limit per MIP solve (None = none). A work limit, unlike
    #: ``time_limit`` independent of the machine's speed: a solve stopped by it reports status
    #: ``time_limit`` (best incumbent + bound), deterministically (tests use it).
    mip_max_nodes: int | None = SOLVE_PARAM["mip_max_nodes"].default
    #: HiGHS' cut pool size (None = HiGHS' default, 10,000). Explicit-bid auctions use 50: their
    #: set-packing roots spend most of a leave-one-out solve separating thousands of cuts that are
    #: never used (16 apps x 64 GPUs, seeds 0-4: CPU time -46% on the worst seed, same optima).
    mip_pool_soft_limit: int | None = SOLVE_PARAM["mip_pool_soft_limit"].default
    #: HiGHS' presolve effort (None = HiGHS' default; 1 = the initial sweep only, 2 = light, 3 =
    #: full). The leave-one-out MILPs left after reduced-cost fixing use 1: on ~1,000 columns whose
    #: warm start is usually optimal, full presolve (probing) was half of each solve (216 such
    #: MILPs of 1,024 GPUs x 256 apps: 15-17 s with full presolve, 8-10 s with the sweep).
    presolve_mode: int | None = SOLVE_PARAM["presolve_mode"].default
    #: HiGHS' feasibility-jump heuristic (None = HiGHS' default, on). Off where a warm start is
    #: given and usually optimal (the same 216 MILPs: a further ~1 s).
    mip_feasibility_jump: bool | None = SOLVE_PARAM["mip_feasibility_jump"].default

    def __post_init__(self):
        for spec in SOLVE_PARAMS:  # an OptionError naming the first field its spec rejects
            spec.check(getattr(self, spec.name))

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


#: the seed of randomised rules (lottery rounding, random policies, PM binning): the one option
#: every solver takes besides the SolveOptions fields; a deterministic solver ignores it, so one loop
#: can run every solver with the same arguments
SEED = Param(
    "seed",
    0,
    Interval(0, MAX_SEED, integer=True),
    "seed for randomised rules and policies",
    flag="--seed",
)
#: PA's rounding of c_i (``formulations/pa.py``): every auction solver's option
ROUNDING = Param(
    "rounding",
    "floor",
    Options(ROUNDING_RULES),
    "auctions: PA's rounding of each app's c_i share of its PF bundle",
    flag="--rounding",
)
#: the leave-one-out solves of PA's payments (False: c_i = 1, the PF allocation kept)
PAYMENTS = Param("payments", True, Boolean(), "compute PA's payments c_i (False: c_i = 1)")
#: the names of the options every solver takes besides the SolveOptions fields
COMMON_OPTIONS = (SEED.name,)
#: their specs
COMMON_PARAMS = (SEED,)


@dataclass(frozen=True)
class SolverEntry(Entry):
    """One solver on one instance kind (a registry :class:`~fairplace.core.registry.Entry`):
    ``factory(instance, opts, name=..., **options) -> Solution`` and ``params``, the specs
    (:class:`~fairplace.core.params.Param`) of the solver-specific options it takes; ``options``
    is their names. Every solver also takes the :class:`SolveOptions` fields and
    :data:`COMMON_OPTIONS` (a solver ignores those it has no use for); anything else is an
    :class:`~fairplace.core.errors.OptionError` naming the option and the solver, and so is a
    value its spec rejects (:meth:`check_values`)."""

    options: tuple[str, ...] = ()

    def __post_init__(self):
        super().__post_init__()
        names = self.option_names()
        missing = [n for n in names if self.spec(n) is None]
        if missing:
            raise ValueError(f"solver options without a spec (a Param): {missing}")
        object.__setattr__(self, "options", names)

    @property
    def fn(self) -> Callable:
        """The solve function (the entry's ``factory``)."""
        return self.factory

    def spec(self, option: str) -> Param | None:
        """The spec of ``option``: the entry's, else the common one (``seed``)."""
        return super().spec(option) or next((p for p in COMMON_PARAMS if p.name == option), None)

    def __call__(self, instance, opts: SolveOptions, **options):
        kept = {k: v for k, v in options.items() if k not in COMMON_OPTIONS or k in self.options}
        return self.fn(instance, opts, **kept)

    def check_values(self, options: Mapping) -> None:
        """Raise :class:`OptionError` naming the first option whose value its spec rejects
        (``seed='x'``, ``seed=-5``, ``rounding=3``, ``payments='yes'``); options it does not
        take are :meth:`reject_unknown`'s."""
        for name, value in options.items():
            spec = self.spec(name)
            if spec is not None:
                spec.check(value)

    def reject_unknown(self, options: Mapping, solver: str, kind: str) -> None:
        """Raise :class:`OptionError` for the first option (sorted) this solver does not take
        (its values are checked by :meth:`check_values`; the one ``check`` of an entry's
        options by name is :meth:`Registry.check <fairplace.core.registry.Registry.check>`)."""
        bad = sorted(set(options) - set(self.options) - set(COMMON_OPTIONS))
        if bad:
            takes = ", ".join(self.options) if self.options else "none"
            raise OptionError(
                bad[0],
                f"not an option of solver {solver!r} on {kind} instances "
                f"(its options: {takes}; and seed and the SolveOptions fields)",
            )
