"""Unknown keys are errors: a misspelled key (``rho_emtpy``) must never be ignored.

One rule for every reader (instance JSON, a trace CSV's header, a sweep spec): a key that its
object does not declare is reported with its path and the nearest known key
(:func:`difflib.get_close_matches`), e.g. ``$.apps[0].rho_emtpy: unknown key 'rho_emtpy'; did you
mean 'rho_empty'?``. Free-form objects (an instance's ``meta``) are declared as such by their
schema and never checked.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: how close a known key must be to be suggested (difflib's ratio)
CUTOFF = 0.6
#: at most this many known keys are listed when none is close
MAX_LISTED = 12


def suggestion(key: str, known: Iterable[str]) -> str | None:
    """The known key nearest to ``key`` (None when none is close)."""
    hits = difflib.get_close_matches(str(key), [str(k) for k in known], n=1, cutoff=CUTOFF)
    return hits[0] if hits else None


def unknown_key(key: str, known: Iterable[str], what: str = "key") -> str:
    """The problem text of an unknown ``key``: the nearest known one, else the known ones."""
    known = list(dict.fromkeys(str(k) for k in known))
    near = suggestion(key, known)
    if near is not None:
        return f"unknown {what} {str(key)!r}; did you mean {near!r}?"
    listed = ", ".join(known[:MAX_LISTED]) + (", ..." if len(known) > MAX_LISTED else "")
    return f"unknown {what} {str(key)!r}; known: {listed}"


def first_unknown(keys: Iterable[str], known: Iterable[str]) -> str | None:
    """The first of ``keys`` not in ``known`` (in the order given), or None."""
    known = set(known)
    return next((k for k in keys if k not in known), None)
