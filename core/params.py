"""One declarative spec per parameter, in the style of scikit-learn's ``_param_validation``
(``Interval``, ``StrOptions``): a :class:`Param` has a name, a type, a default, a range
(:class:`Interval`), choices (:class:`Options`, names or integers), true/false (:class:`Boolean`), a
``[low, high]`` pair of a range (:class:`Pair`), a list of values of one (:class:`Items`), an object of
a type (:class:`InstanceOf`, an option given from Python only) or any of these (:class:`AnyOf`),
whether None is also valid (``nullable``), a one-line doc and its CLI flag. Everything else derives
from it: the dataclass default, the one check (:meth:`Param.check`, an
:class:`~fairplace.core.errors.OptionError` naming the parameter's path), the JSON Schema of the
instance / sweep documents (:meth:`Param.schema`), the CLI help (:meth:`Param.help`) and, for the
fuzz tests, values the check must reject (:meth:`Param.invalid_values`).

The specs of parameters that more than one layer reads are made from it in
:mod:`fairplace.core.shared_params`.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairplace.core.errors import DataError, OptionError, UnknownName

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

    def _text(self, x: float) -> str:
        return str(int(x)) if self.integer else f"{x:g}"  # an integer range's ends exactly

    def describe(self) -> str:
        """``[1, 1e+06]``, ``[0, 1)``, ``> 0``, ``[0, 9223372036854775807]``."""
        lo = "-inf" if self.left is None else self._text(self.left)
        hi = "inf" if self.right is None else self._text(self.right)
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
    """A closed set of names (scikit-learn's ``StrOptions``) or of integers (THEMIS'
    ``contention``: 1, 2 or 4; not a float such as 2.0, not a bool)."""

    values: Iterable[Any]  # names or integers (a tuple, a Registry), kept as a tuple

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self.values))

    @property
    def names(self) -> bool:
        """True for a set of names, False for a set of integers."""
        return all(isinstance(v, str) for v in self.values)

    def contains(self, value: Any) -> bool:
        kind = str if self.names else numbers.Integral
        return isinstance(value, kind) and not isinstance(value, bool) and value in self.values

    def describe(self) -> str:
        return "one of " + ", ".join(str(v) for v in self.values)

    def schema(self) -> dict:
        return {"enum": list(self.values)}

    def outside(self) -> tuple:
        if self.names:
            first = str(next(iter(self.values)))
            return ("", "not-" + first, first.upper() + "?")
        ints = [int(v) for v in self.values]
        lo, hi = min(ints), max(ints)
        gaps = [v for v in range(lo, hi) if v not in ints][:1]  # one missing between
        return (lo - 1, hi + 1, *gaps, float(ints[0]), str(ints[0]))


@dataclass(frozen=True)
class Boolean:
    """True or False (a numpy bool too; not 0, 1 or a string)."""

    def contains(self, value: Any) -> bool:
        return isinstance(value, (bool, np.bool_))

    def describe(self) -> str:
        return "true or false"

    def schema(self) -> dict:
        return {"type": "boolean"}

    def outside(self) -> tuple:
        return (0, 1, "true", "no", 1.0)


@dataclass(frozen=True)
class InstanceOf:
    """An object of one of ``types`` (a ``runtime_checkable`` Protocol too; scikit-learn's type
    constraints), ``text`` naming it in words: an option given from Python only (no JSON form),
    or any string (an app id)."""

    types: tuple[type, ...]
    text: str

    def contains(self, value: Any) -> bool:
        return isinstance(value, self.types) and not isinstance(value, bool)

    def describe(self) -> str:
        return self.text

    def schema(self) -> dict:
        """``{"type": "string"}`` for a string, else no JSON value (``{"not": {}}``)."""
        return {"type": "string"} if self.types == (str,) else {"not": {}}

    def outside(self) -> tuple:
        return (1, 0.5, "x", b"x", (1,), {"x": 1}, object())


@dataclass(frozen=True)
class Pair:
    """Two numbers ``[low, high]`` of the range ``item`` with low <= high (a list or a tuple):
    THEMIS' ``jobs_range``."""

    item: Interval

    def contains(self, value: Any) -> bool:
        return (
            isinstance(value, (list, tuple))
            and len(value) == 2
            and all(self.item.contains(v) for v in value)
            and value[0] <= value[1]
        )

    def describe(self) -> str:
        return f"[low, high] with low <= high, each {_one(self.item)}"

    def schema(self) -> dict:
        """Two items of ``item``'s schema (JSON Schema cannot say low <= high)."""
        return {"type": "array", "minItems": 2, "maxItems": 2, "items": self.item.schema()}

    def outside(self) -> tuple:
        """The pair reversed, one or three items, an item outside ``item``."""
        points = (self.item.left, 0, 1, 2, 3)
        inside = sorted({v for v in points if v is not None and self.item.contains(v)})
        lo, hi = inside[0], inside[-1]
        bad = [[lo, v] for v in self.item.outside()[:4]]
        return ((hi, lo), [lo], [lo, lo, hi], *bad, f"{lo},{hi}")


@dataclass(frozen=True)
class Items:
    """A list (or tuple) of ``min_items`` or more values of ``item``: the demands or PM-score
    levels an instance generator draws from, its class names."""

    item: Interval | Options | InstanceOf
    min_items: int = 1

    def contains(self, value: Any) -> bool:
        return (
            isinstance(value, (list, tuple))
            and len(value) >= self.min_items
            and all(self.item.contains(v) for v in value)
        )

    def describe(self) -> str:
        return f"a list of {self.min_items} or more, each {_one(self.item)}"

    def schema(self) -> dict:
        return {"type": "array", "minItems": self.min_items, "items": self.item.schema()}

    def outside(self) -> tuple:
        """Too few items, an item outside ``item`` among good ones, a lone value, a mapping."""
        c = self.item
        picks = (*getattr(c, "values", ()), getattr(c, "left", None), getattr(c, "right", None))
        good = next((v for v in (*picks, 1, "A") if v is not None and c.contains(v)), None)
        short = [good] * (self.min_items - 1)
        bad = [[*short, v] for v in c.outside() if not c.contains(v)][:4]
        return (short, *bad, "x", 1, {"x": 1})


def _one(c: Interval | Options | InstanceOf) -> str:
    """One value of ``c`` in words: ``an integer in [1, 4]``, ``a number > 0``, ``one of a, b``."""
    if not isinstance(c, Interval):
        return c.describe()
    text = c.describe()
    return f"{'an integer' if c.integer else 'a number'} {'in ' if text[0] in '[(' else ''}{text}"


@dataclass(frozen=True)
class AnyOf:
    """Any of ``constraints`` (scikit-learn's list of constraints): a name or an object."""

    constraints: tuple[Interval | Options | Boolean | InstanceOf | Pair | Items, ...]

    def contains(self, value: Any) -> bool:
        return any(c.contains(value) for c in self.constraints)

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.constraints)

    def schema(self) -> dict:
        parts = [c.schema() for c in self.constraints if c.schema() != {"not": {}}]
        return parts[0] if len(parts) == 1 else {"anyOf": parts}

    def outside(self) -> tuple:
        return tuple(v for c in self.constraints for v in c.outside() if not self.contains(v))


@dataclass(frozen=True)
class Param:
    """One parameter: ``name`` (as a keyword), ``default``, ``constraint`` (:class:`Interval`,
    :class:`Options`, :class:`Boolean`, :class:`Pair`, ...), ``doc`` (one line), ``flag`` (the CLI flag that sets
    it), ``path`` (how errors name it where it is nested, e.g. ``scheduler_options.f``; default
    ``name``) and ``nullable`` (None is valid too: "the trace's", "none", "HiGHS' default")."""

    name: str
    default: Any
    constraint: Interval | Options | Boolean | InstanceOf | Pair | Items | AnyOf
    doc: str
    flag: str | None = None
    path: str | None = None
    nullable: bool = False

    @property
    def where(self) -> str:
        """How an error names the parameter."""
        return self.path or self.name

    def accepts(self, value: Any) -> bool:
        """True if :meth:`check` accepts ``value``."""
        return (value is None and self.nullable) or self.constraint.contains(value)

    def check(self, value: Any, where: str | None = None) -> Any:
        """``value`` as the parameter's type (a float for a real range, an int for an integer
        range, a bool) if the constraint holds (or it is None and the parameter is nullable),
        else an :class:`OptionError` naming ``where`` (default :attr:`where`) with the range and
        the value (an :class:`UnknownName`, one, where a name is not one of the choices)."""
        if value is None and self.nullable:
            return None
        c = self.constraint
        if not c.contains(value):
            none = " or None" if self.nullable else ""
            if isinstance(c, Interval):
                problem = f"must be {_one(c)}{none}, got {value!r}"
            elif isinstance(c, Boolean):
                problem = f"must be true or false{none}, got {value!r}"
            else:
                problem = f"expected {c.describe()}{none}, got {value!r}"
            names = (c,) if isinstance(c, Options) else getattr(c, "constraints", ())
            unknown = isinstance(value, str) and any(
                isinstance(n, Options) and n.names for n in names
            )
            raise (UnknownName if unknown else OptionError)(where or self.where, problem)
        if isinstance(c, Interval):
            return int(value) if c.integer else float(value)
        if isinstance(c, (Pair, Items)) and isinstance(c.item, Interval):
            return tuple(int(v) if c.item.integer else float(v) for v in value)
        return bool(value) if isinstance(c, Boolean) else value

    def schema(self) -> dict:
        """The JSON Schema of the value (with ``description`` = the doc and ``default``)."""
        value = self.constraint.schema()
        if self.nullable:
            value = {"anyOf": [value, {"type": "null"}]}
        return {**value, "description": self.doc, "default": self.default}

    def help(self) -> str:
        """The CLI help line: the doc, the range and the default."""
        return f"{self.doc}; {self.constraint.describe()} (default {self.default})"

    def invalid_values(self) -> tuple:
        """Values :meth:`check` must reject: out of range, non-finite, of the wrong type."""
        values = (*self.constraint.outside(), None, True, "x", [1])
        return tuple(v for v in values if not self.accepts(v))


def scheduler_option(
    name: str, default: Any, constraint, doc: str, nullable: bool = False
) -> Param:
    """A scheduler's option: set by ``--scheduler-option NAME=VALUE``, named
    ``scheduler_options.NAME`` in errors (the registries' ``options_path``)."""
    flag, path = f"--scheduler-option {name}", f"scheduler_options.{name}"
    return Param(name, default, constraint, doc, flag=flag, path=path, nullable=nullable)


def checked(params: tuple[Param, ...], error: type[DataError] = OptionError):
    """Decorate a function (a trace or instance generator) so that it checks each argument given
    against its spec first (:meth:`Param.check`; an ``error`` naming the argument)."""

    def wrap(generator: Callable) -> Callable:
        sig = inspect.signature(generator)

        @functools.wraps(generator)
        def gen(*args, **kwargs):
            given = sig.bind(*args, **kwargs).arguments
            for spec in params:
                if spec.name in given:
                    try:
                        spec.check(given[spec.name])
                    except OptionError as exc:
                        if isinstance(exc, error):
                            raise
                        raise error(exc.path, exc.problem) from None
            return generator(*args, **kwargs)

        return gen

    return wrap
