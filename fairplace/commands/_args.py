"""Checked argument types and output-path checks shared by the commands: a bad value is an argparse
error (one line naming the flag, exit 2) before anything runs; ranges come from ``fairplace.limits``."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from fairplace.errors import OptionError
from fairplace.limits import MAX_GPUS, MAX_RATIO, MAX_SEED, MAX_TIME, MAX_WORKERS


def _integer(text: str, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not lo <= v <= hi:
        raise argparse.ArgumentTypeError(f"must be in [{lo}, {hi}], got {text}")
    return v


def _real(text: str, lo: float, hi: float, lo_open: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
        low = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise argparse.ArgumentTypeError(f"must be a finite number {low} and <= {hi:g}, got {text}")
    return v


def seed(text: str) -> int:
    """A seed: an integer in [0, 2^63 - 1]."""
    return _integer(text, 0, MAX_SEED)


def gpus(text: str) -> int:
    """A GPU count in [1, MAX_GPUS]."""
    return _integer(text, 1, MAX_GPUS)


def workers(text: str) -> int:
    """A number of worker processes in [1, MAX_WORKERS]."""
    return _integer(text, 1, MAX_WORKERS)


def seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    return _real(text, 0.0, MAX_TIME, lo_open=True)


def seconds_or_zero(text: str) -> float:
    """A finite number of seconds >= 0."""
    return _real(text, 0.0, MAX_TIME)


def penalty(text: str) -> float:
    """A locality penalty in [1, MAX_RATIO]."""
    return _real(text, 1.0, MAX_RATIO)


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
