"""One registry type for every set of names: solvers, back ends, schedulers, placement policies.

A :class:`Registry` maps a name to an :class:`Entry`: its ``factory`` (what the name makes or runs),
the ``options`` it takes and the specs of those that have one (``params``: the
:class:`~fairplace.core.params.Param` of ``scheduler_options.f``, a policy's ``ties``, ...), a
one-line ``doc`` and its ``capabilities`` (what callers know of it before making it: THEMIS'
round is its lease option, a sticky policy keeps its GPUs, the instance kinds a solver solves).
``Registry.get`` raises :class:`~fairplace.core.errors.UnknownName` listing the known names;
``Registry.make`` checks the options (an unknown one or a value outside its spec is an
:class:`~fairplace.core.errors.OptionError` naming ``<options_path>.<option>``, e.g.
``scheduler_options.f``) and passes the caller's ``context`` (the run's seed, ...), which is never an
option.

A user's object takes the same path as a built-in name: ``Registry.resolve(x)`` makes a name
from its entry and checks an object against the registry's Protocols (``isinstance`` on
``runtime_checkable`` Protocols); ``Registry.entry_of(x)`` gives either one an entry, an object's
capabilities read off its attributes. The CLI help, the sweep schema and ``fairplace.simulate``
read the registries (their names, docs and specs); nothing is registered at run time. Each is
built once, at import, from factories its module imports (a module that would import the
registry's own module back moves what both need below them instead).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, ItemsView, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fairplace.core.errors import OptionError, UnknownName
from fairplace.core.params import Param

_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _frozen(mapping: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Entry:
    """One name of a registry: ``factory`` (called with the checked options), ``options`` (the
    option names it takes; None: the factory's keyword parameters), ``doc`` (one line),
    ``params`` (the specs of the options that have one; their names are options too) and
    ``capabilities`` (what is known of it before it is made)."""

    factory: Callable[..., Any]
    options: tuple[str, ...] | None = None
    doc: str = ""
    params: tuple[Param, ...] = ()
    capabilities: Mapping[str, Any] = field(default_factory=_frozen)

    def __post_init__(self):
        object.__setattr__(self, "capabilities", _frozen(self.capabilities))

    def keywords(self) -> tuple[str, ...] | None:
        """The factory's keyword parameters (None: it takes any, ``**kwargs``)."""
        sig = inspect.signature(self.factory).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig):
            return None
        return tuple(p.name for p in sig if p.kind in _KEYWORD)

    def option_names(self) -> tuple[str, ...]:
        """Every option it takes: ``options`` (or the factory's keyword parameters) and the specs'."""
        names = self.options if self.options is not None else (self.keywords() or ())
        return tuple(dict.fromkeys((*names, *(p.name for p in self.params))))

    def spec(self, option: str) -> Param | None:
        """The spec of ``option``, or None when it has none."""
        return next((p for p in self.params if p.name == option), None)


@dataclass(frozen=True)
class Registry:
    """Names of one ``kind`` (``"scheduler"``, ``"placement policy"``, ...) -> :class:`Entry`, in
    the order the CLI help lists them. ``where``: the parameter that takes a name (errors name it);
    ``options_path``: the parameter that holds the options (an error names
    ``<options_path>.<option>``; empty: the option itself); ``context``: what the caller gives
    every factory that takes it (never an option: the run's seed, ...); ``protocols``: what a
    user's object satisfies instead (``runtime_checkable``), ``shape`` saying it in words;
    ``fold_case``: names are matched lower-cased; ``object_capabilities``: the attributes read off
    a user's object as its capabilities (:meth:`entry_of`)."""

    kind: str
    entries: Mapping[str, Entry]
    where: str = ""
    options_path: str = ""
    context: tuple[str, ...] = ()
    protocols: tuple[type, ...] = ()
    shape: str = ""
    fold_case: bool = False
    object_capabilities: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "entries", _frozen(self.entries))
        object.__setattr__(self, "where", self.where or self.kind)

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.key(name) in self.entries

    def items(self) -> ItemsView[str, Entry]:
        return self.entries.items()

    def key(self, name: str) -> str:
        """``name`` as the registry spells it (lower-cased where ``fold_case``)."""
        return str(name).lower() if self.fold_case else str(name)

    def path(self, option: str) -> str:
        """How an error names ``option``: ``scheduler_options.f``."""
        return f"{self.options_path}.{option}" if self.options_path else option

    def get(self, name: str) -> Entry:
        """The entry of ``name``; :class:`UnknownName` listing the known names otherwise."""
        key = self.key(name)
        if key not in self.entries:
            raise UnknownName(
                self.where, f"unknown {self.kind} {name!r}; known: {', '.join(self.entries)}"
            )
        return self.entries[key]

    def option_names(self, name: str) -> tuple[str, ...]:
        """The options ``name`` takes (its entry's, less the caller's :attr:`context`)."""
        return tuple(o for o in self.get(name).option_names() if o not in self.context)

    def check(self, name: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` of ``name`` with each spec'd value checked (:meth:`Param.check`); one it
        does not take is an :class:`OptionError` naming it (:meth:`path`)."""
        entry, known = self.get(name), self.option_names(name)
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise OptionError(
                self.path(unknown[0]),
                f"unknown option of {self.kind} {self.key(name)!r}; known: {sorted(known)}",
            )
        out = dict(options)
        for option, value in options.items():
            spec = entry.spec(option)
            if spec is not None:
                out[option] = spec.check(value, self.path(option))
        return out

    def make(self, name: str, options: Mapping[str, Any] | None = None, /, **context) -> Any:
        """``name``'s factory called with ``options`` (checked: :meth:`check`) and those of the
        caller's ``context`` (names in :attr:`context`) that the factory takes."""
        checked = self.check(name, options or {})
        entry = self.get(name)
        takes = entry.keywords()
        given = {k: v for k, v in context.items() if takes is None or k in takes}
        return entry.factory(**checked, **given)

    def accepts(self, obj: Any) -> bool:
        """True if ``obj`` satisfies one of the registry's Protocols."""
        return any(isinstance(obj, p) for p in self.protocols)

    def check_object(self, obj: Any) -> None:
        """:class:`UnknownName` unless ``obj`` is a name or satisfies one of the Protocols."""
        if isinstance(obj, str) or self.accepts(obj):
            return
        lacks = _missing(obj, self.protocols)  # what it lacks of the Protocol it is closest to
        raise UnknownName(
            self.where,
            f"expected a {self.kind.replace(' ', '-')} name ({', '.join(self.entries)}) or an "
            f"object with {self.shape}, got {obj!r}" + (f", which lacks {lacks}" if lacks else ""),
        )

    def resolve(self, obj: Any, options: Mapping[str, Any] | None = None, /, **context) -> Any:
        """A name made from its entry (:meth:`make`), or a user's object as it is (checked against
        the Protocols; its options are set on the object, so any given here are an error)."""
        if isinstance(obj, str):
            return self.make(obj, options, **context)
        self.check_object(obj)
        if options:
            raise OptionError(
                self.options_path or self.where,
                f"set the options of a {self.kind} object on the object",
            )
        return obj

    def entry_of(self, obj: Any) -> tuple[str, Entry]:
        """(name, entry) of a name, or of a user's object (checked: :meth:`check_object`): an
        entry making that object, its capabilities its attributes named in
        :attr:`object_capabilities`."""
        if isinstance(obj, str):
            return self.key(obj), self.get(obj)
        self.check_object(obj)
        caps = {k: getattr(obj, k) for k in self.object_capabilities if hasattr(obj, k)}
        doc = (type(obj).__doc__ or "").strip().split("\n")[0]
        return str(obj.name), Entry(lambda: obj, (), doc, (), caps)


def _missing(obj: Any, protocols: tuple[type, ...]) -> str:
    """The members ``obj`` lacks of the Protocol it is closest to (fewest missing), as words:
    ``'name'``, ``'next_change()'``; '' when none can be told."""
    best: list[str] | None = None
    for p in protocols:
        attrs = {a for b in p.__mro__[:-1] if b.__name__ not in ("Protocol", "Generic")
                 for a in (*vars(b), *getattr(b, "__annotations__", {})) if not a.startswith("_")}  # fmt: skip
        miss = sorted(a for a in attrs if not hasattr(obj, a))
        if miss and (best is None or len(miss) < len(best)):
            best = [f"{a}()" if callable(getattr(p, a, None)) else a for a in miss]
    return " and ".join(best or [])
