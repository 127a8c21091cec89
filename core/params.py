"""One declarative spec per parameter, in the style of scikit-learn's ``_param_validation``
(``Interval``, ``StrOptions``): a :class:`Param` has a name, a type, a default, a range
(:class:`Interval`) or choices (:class:`Options`), a one-line doc and its CLI flag. Everything else
derives from it: the dataclass default, the one check (:meth:`Param.check`, an
:class:`~fairplace.core.errors.OptionError` naming the parameter's path), the JSON Schema of the
instance / sweep documents (:meth:`Param.schema`), the CLI help (:meth:`Param.help`) and, for the
fuzz tests, values the check must reject (:meth:`Param.invalid_values`).

The specs of parameters that more than one layer reads live here, on the ground floor:
:data:`LOCALITY_PENALTY` (PAL's L across machines: the simulator, the placement policies, the
placement instance JSON, ``--locality-penalty``), :data:`THEMIS_F` (THEMIS' filter,
``scheduler_options.f``) and the simulator's clock, :data:`DECISION_TICK` and
:data:`BASELINE_LEASE` (``SimulationConfig``, the sweep schema and the CLI).
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_RATIO, MAX_TIME

_CLOSED = ("both", "left", "right", "neither")


@dataclass(frozen=True)
class Interval:
    """A real (``integer=False``) or integer range; ``closed`` says which ends belong to it
    (``both``, ``left``, ``right``, ``neither``); None is an open end."""

    left: float | None
    right: float | None
    closed: str = "both"
    integer: bool = False

    def __post_init__(self):
        if self.closed not in _CLOSED:
            raise ValueError(f"closed must be one of {_CLOSED}, got {self.closed!r}")

    def contains(self, value: Any) -> bool:
        """True if ``value`` is a finite number of the right kind inside the range (bools are not
        numbers here)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        v: float | int
        if isinstance(value, numbers.Integral):
            v = operator.index(value)  # exact, of any size
        elif self.integer:
            return False
        else:
            v = float(value)
            if not math.isfinite(v):
                return False
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.left is not None and (v < self.left or (v == self.left and not lo_in)):
            return False
        return not (self.right is not None and (v > self.right or (v == self.right and not hi_in)))

    def describe(self) -> str:
        """``[1, 1e+06]``, ``[0, 1)``, ``> 0``."""
        lo = "-inf" if self.left is None else f"{self.left:g}"
        hi = "inf" if self.right is None else f"{self.right:g}"
        if self.right is None and self.left is not None:
            return f">= {lo}" if self.closed in ("both", "left") else f"> {lo}"
        return (
            ("[" if self.closed in ("both", "left") else "(")
            + f"{lo}, {hi}"
            + ("]" if self.closed in ("both", "right") else ")")
        )

    def schema(self) -> dict:
        """The JSON Schema of the range."""
        out: dict = {"type": "integer" if self.integer else "number"}
        if self.left is not None:
            key = "minimum" if self.closed in ("both", "left") else "exclusiveMinimum"
            out[key] = self.left
        if self.right is not None:
            key = "maximum" if self.closed in ("both", "right") else "exclusiveMaximum"
            out[key] = self.right
        return out

    def outside(self) -> tuple[float | int, ...]:
        """Numbers of the right type just outside and far outside the range (the boundary itself
        where it is open), and the non-finite floats."""
        out: list[float | int] = [math.nan, math.inf, -math.inf]
        if self.left is not None:
            lo = float(self.left)
            out += [lo] if self.closed in ("right", "neither") else []
            out += [lo - 1 if self.integer else math.nextafter(lo, -math.inf), lo - 1e6]
        if self.right is not None:
            hi = float(self.right)
            out += [hi] if self.closed in ("left", "neither") else []
            out += [hi + 1 if self.integer else math.nextafter(hi, math.inf), hi * 10 + 1e6]
            out += [10**400]  # an integer no float holds
        if self.integer:
            out = [int(v) if isinstance(v, float) and math.isfinite(v) else v for v in out]
            out.append(0.5 + (self.left or 0))
        return tuple(out)


@dataclass(frozen=True)
class Options:
    """A closed set of names (scikit-learn's ``StrOptions``)."""

    values: Iterable[str]  # any iterable of names (a tuple, a Registry), kept as a tuple

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self.values))

    def contains(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    def describe(self) -> str:
        return "one of " + ", ".join(self.values)

    def schema(self) -> dict:
        return {"enum": list(self.values)}

    def outside(self) -> tuple[str, ...]:
        first = next(iter(self.values))
        return ("", "not-" + first, first.upper() + "?")


@dataclass(frozen=True)
class Param:
    """One parameter: ``name`` (as a keyword), ``default``, ``constraint`` (:class:`Interval` or
    :class:`Options`), ``doc`` (one line), ``flag`` (the CLI flag that sets it) and ``path`` (how
    errors name it where it is nested, e.g. ``scheduler_options.f``; default ``name``)."""

    name: str
    default: Any
    constraint: Interval | Options
    doc: str
    flag: str | None = None
    path: str | None = None

    @property
    def where(self) -> str:
        """How an error names the parameter."""
        return self.path or self.name

    def check(self, value: Any, where: str | None = None) -> Any:
        """``value`` as the parameter's type (a float for a real range, an int for an integer
        range) if the constraint holds, else an :class:`OptionError` naming ``where`` (default
        :attr:`where`) with the range and the value."""
        if not self.constraint.contains(value):
            kind = "a number" if isinstance(self.constraint, Interval) else "a name"
            if isinstance(self.constraint, Interval) and self.constraint.integer:
                kind = "an integer"
            raise OptionError(
                where or self.where,
                f"must be {kind} in {self.constraint.describe()}, got {value!r}"
                if isinstance(self.constraint, Interval)
                else f"expected {self.constraint.describe()}, got {value!r}",
            )
        if isinstance(self.constraint, Interval):
            return int(value) if self.constraint.integer else float(value)
        return value

    def schema(self) -> dict:
        """The JSON Schema of the value (with ``description`` = the doc and ``default``)."""
        return {**self.constraint.schema(), "description": self.doc, "default": self.default}

    def help(self) -> str:
        """The CLI help line: the doc, the range and the default."""
        return f"{self.doc}; {self.constraint.describe()} (default {self.default})"

    def invalid_values(self) -> tuple:
        """Values :meth:`check` must reject: out of range, non-finite, of the wrong type."""
        return (*self.constraint.outside(), None, True, "x", [1])


#: PAL's locality penalty L: a job spread over several machines runs L x slower (§IV-D: "initially
#: estimated a locality penalty to be 1.7"; the artifact's constant ``lf_across``), 1 within one.
LOCALITY_PENALTY = Param(
    "locality_penalty",
    1.7,
    Interval(1.0, MAX_RATIO),
    "L: a job spread over several machines runs L x slower",
    flag="--locality-penalty",
)

#: THEMIS' filter (§5.1): each round the ceil((1 - f) N) apps with the worst rho bid.
THEMIS_F = Param(
    "f",
    0.8,
    Interval(0.0, 1.0, closed="left"),
    "THEMIS filter: each round the ceil((1 - f) N) apps with the worst rho bid",
    flag="--scheduler-option f",
    path="scheduler_options.f",
)

#: one decision clock for every scheduler (THEMIS §6.2 judges every scheduler on the same events):
#: decisions at ticks t0 + k * tick, at the first tick at or after an event (``fairplace.sim.engine``)
DECISION_TICK = Param(
    "decision_tick",
    None,
    Interval(0.0, MAX_TIME),
    "decision tick in s, one clock for every scheduler (0: each its own; None: the trace's, else 0)",
    flag="--decision-tick",
)
#: the queue baselines' lease (THEMIS §6.2: "lease = 10 minutes"): a running job is not preempted
#: before its lease ends (``fairplace.sim.leases``)
BASELINE_LEASE = Param(
    "baseline_lease",
    None,
    Interval(0.0, MAX_TIME),
    "lease in s of a queue scheduler's running job (0: none; None: the trace's, else 0)",
    flag="--baseline-lease",
)
