"""Checked argument types and output-path checks shared by the commands: a bad value is an argparse
error (one line naming the flag, exit 2) before anything runs; a flag with a spec is checked by it
(:func:`param`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from fairplace.core.errors import OptionError
from fairplace.core.params import Options, Param


def number(text: str) -> int | float | str:
    """An integral literal as an int (``8``: an integer spec takes no 8.0), else a float (``inf``
    and ``nan`` too), else the text itself (the spec names the problem)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def param(spec: Param) -> Callable[[str], Any]:
    """An argparse ``type`` for the flag of ``spec``: the text as a :func:`number` (or as is, for
    a spec of names), checked by :meth:`Param.check` (a bad value: one line naming the flag)."""

    flag = replace(spec, nullable=False)  # None cannot be typed: the message leaves it out

    def parse(text: str) -> Any:
        value = text if isinstance(spec.constraint, Options) else number(text)
        try:
            return flag.check(value, spec.flag)
        except OptionError as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None

    parse.__name__ = spec.name  # argparse names the type in some messages
    return parse


def _first_existing(p: Path) -> Path:
    for q in (p, *p.parents):
        if q.exists():
            return q
    return Path(".")


def out_dir(path: str | Path, flag: str = "--out") -> Path:
    """An output folder: absent (it will be created) or a folder, never an existing file."""
    p = Path(path)
    base = _first_existing(p)
    if not base.is_dir():
        raise OptionError(flag, f"{base} exists and is not a folder")
    return p


def out_file(path: str | Path, suffixes: tuple[str, ...], flag: str = "--out") -> Path:
    """An output file with one of ``suffixes``, whose folder exists or can be created."""
    p = Path(path)
    if p.suffix not in suffixes:
        raise OptionError(
            flag, f"{p.name!r}: unknown extension {p.suffix or '(none)'}; use {', '.join(suffixes)}"
        )
    if p.is_dir():
        raise OptionError(flag, f"{p} is a folder; give a file name")
    out_dir(p.parent, flag)
    return p


def allow_insecure(p) -> None:
    """``--allow-insecure``: accept a plain-text ``--scheduler-address`` to another host."""
    p.add_argument(
        "--allow-insecure",
        action="store_true",
        help="accept a plain tcp:// --scheduler-address to a host that is not loopback (Dask sends "
        "pickles over it, unencrypted); without it such an address is refused: use tls://",
    )


def scheduler_address(args) -> str | None:
    """``--scheduler-address`` checked before anything runs (``runs/dask_cluster.checked_address``):
    plain text to another host is refused unless ``--allow-insecure``."""
    from fairplace.runs.dask_cluster import checked_address  # heavy: imported on use

    return checked_address(args.scheduler_address, args.allow_insecure)
