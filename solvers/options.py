"""Solver options shared by every back end."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fairplace.errors import OptionError


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
    #: HiGHS' cut pool size (None = HiGHS' default, 10,000). Explicit-bid auctions use 50: their
    #: set-packing roots spend most of a leave-one-out solve separating thousands of cuts that are
    #: never used (16 apps x 64 GPUs, seeds 0-4: CPU time -46% on the worst seed, same optima).
    mip_pool_soft_limit: int | None = None

    def __post_init__(self):
        if self.time_limit is not None and (
            not math.isfinite(self.time_limit) or self.time_limit <= 0
        ):
            raise OptionError(
                "time_limit", f"must be a positive number of seconds, got {self.time_limit!r}"
            )
        for name in ("mip_rel_gap", "mip_abs_gap"):
            if getattr(self, name) < 0:
                raise OptionError(name, f"must be >= 0, got {getattr(self, name)!r}")
        if self.threads < 1:
            raise OptionError("threads", f"must be >= 1, got {self.threads!r}")

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
        if self.mip_pool_soft_limit is not None:
            out["mip_pool_soft_limit"] = int(self.mip_pool_soft_limit)
        return out

    def with_(self, **kw) -> SolveOptions:
        return replace(self, **kw)

    @classmethod
    def from_kwargs(cls, time_limit=None, **kw) -> SolveOptions:
        known = set(cls.__dataclass_fields__)
        unknown = set(kw) - known
        if unknown:
            raise OptionError(sorted(unknown)[0], f"unknown solver option; known: {sorted(known)}")
        return cls(time_limit=time_limit, **kw)
