"""The claims schema: the keys of a ``[[claim]]`` of ``papers/<paper>/claims.toml``, its ``kind``
(the paper's own claim or the package's own check), the paper's range and the outcome rule
(``fairplace.analysis.claims`` judges claims with it; see its module doc)."""

from __future__ import annotations

import math

from fairplace.core.errors import DataError
from fairplace.core.params import Options, Param

from .claims_pal import precision_tolerance

#: outcomes of a paper claim (kind "paper")
OUTCOMES = ("reproduces", "direction only", "does not reproduce", "not run")
#: outcomes of a package check (kind "check"): inside its range passes, anything else fails
CHECK_OUTCOMES = ("passes", "fails", "not run")
#: a claim's kind: the paper's own claim, or the package's own check (words its spec checks,
#: :data:`CLAIM_KIND`; the outcome rule reads them)
KINDS = ("paper", "check")
#: a claim's ``kind`` (:data:`KINDS`)
CLAIM_KIND = Param(
    "kind", "paper", Options(KINDS), "the paper's own claim, or the package's own check"
)
DIRECTIONS = ("higher", "lower")
#: keys a claim may have (anything else is a typo and raises DataError naming it)
CLAIM_KEYS = {
    "id", "kind", "text", "figure", "section", "paper", "paper_range", "tolerance", "direction",
    "null_value", "experiment", "measure", "args", "unit", "caveat", "draws", "precision",
    "over_draws",
}  # fmt: skip


def check_kind(claim: dict, required: bool = True) -> str:
    """The claim's ``kind`` (:data:`KINDS`); a paper claim must give the paper's words (``paper``)
    and where it says so (``section`` or ``figure``). Missing (when ``required``) or unknown: a
    DataError naming ``<id>.kind``. A claim without ``kind`` and not ``required`` is a paper claim."""
    cid = claim.get("id", "<claim>")
    if "kind" not in claim:
        if required:
            raise DataError(f"{cid}.kind", f"missing: say {' or '.join(map(repr, KINDS))} (the "
                            "paper's own claim, or the package's own check)")  # fmt: skip
        return "paper"
    kind = CLAIM_KIND.check(claim["kind"], f"{cid}.kind")
    if kind == "paper":
        if not str(claim.get("paper", "")).strip():
            raise DataError(f"{cid}.paper", "a paper claim gives the paper's own words")
        if not str(claim.get("section", "") or claim.get("figure", "")).strip():
            raise DataError(f"{cid}.section", "a paper claim says where the paper states it")
    return kind


def check_claims(claims: list[dict], source: str = "claims.toml") -> list[dict]:
    """Validate a claims file's ``[[claim]]`` list (``source`` names it in errors): every claim's
    schema (:func:`check_claim`), a ``kind`` on every claim (:func:`check_kind`), unique ids."""
    seen: set[str] = set()
    for c in claims:
        if "id" not in c:
            raise DataError(f"{source}.claim.id", "missing")
        if c["id"] in seen:
            raise DataError(f"{c['id']}.id", f"duplicate claim id in {source}")
        seen.add(c["id"])
        check_claim(c)
        check_kind(c, required=True)
    return claims


def check_claim(claim: dict) -> tuple[float, float, float]:
    """Validate a claim's schema; returns (lo, hi, tolerance)."""
    cid = claim.get("id", "<claim>")
    unknown = set(claim) - CLAIM_KEYS
    if unknown:
        raise DataError(f"{cid}.{sorted(unknown)[0]}", "unknown claim key")
    for k in ("id", "text", "experiment", "measure", "paper_range"):
        if k not in claim:
            raise DataError(f"{cid}.{k}", "missing")
    r = claim["paper_range"]
    if isinstance(r, (int, float)):
        r = [r, r]
    if (
        not isinstance(r, list)
        or len(r) != 2
        or not all(isinstance(v, (int, float)) for v in r)
        or r[0] > r[1]
    ):
        raise DataError(f"{cid}.paper_range", f"expected [lo, hi] with lo <= hi, got {r!r}")
    half = precision_tolerance(claim)  # PAL: half a unit of the paper's last printed digit
    tol = claim.get("tolerance", 0.0) if half is None else half
    if not isinstance(tol, (int, float)) or tol < 0:
        raise DataError(f"{cid}.tolerance", f"expected a number >= 0, got {tol!r}")
    d = claim.get("direction")
    if d is not None and d not in DIRECTIONS:
        raise DataError(f"{cid}.direction", f"expected one of {DIRECTIONS}, got {d!r}")
    if d is not None and not isinstance(claim.get("null_value"), (int, float)):
        raise DataError(f"{cid}.null_value", "a direction needs the null value it is measured from")
    check_kind(claim, required=False)
    return float(r[0]), float(r[1]), float(tol)


def outcome(value: float, claim: dict) -> str:
    """``reproduces`` / ``direction only`` / ``does not reproduce`` for ``value`` (module doc).
    A range with one infinite end whose other end is the claim's ``null_value`` (a claim in words
    only: the side of no effect) is open at the null value: no effect does not reproduce it."""
    lo, hi, tol = check_claim(claim)
    null = claim.get("null_value")
    open_lo = math.isinf(hi) and lo == null and not tol
    open_hi = math.isinf(lo) and hi == null and not tol
    inside = lo - tol <= value <= hi + tol
    if math.isfinite(value) and inside and not (open_lo and value == lo or open_hi and value == hi):
        return "reproduces"
    d = claim.get("direction")
    if null is not None and (d == "higher" and value > null or d == "lower" and value < null):
        return "direction only"
    return "does not reproduce"


def range_text(claim: dict) -> str:
    lo, hi, tol = check_claim(claim)
    unit = claim.get("unit", "")
    r = f"{lo:g}{unit}" if lo == hi else f"[{lo:g}, {hi:g}]{unit}"
    return r + (f" ± {tol:g}" if tol else "")


#: the heads of every ``not run`` reason (module doc); details follow after ": "
AT_THIS_SIZE = "not run at this size"
NEEDS_FULL = "needs the full size"
FAILED = "the experiment failed"
NOT_RUN_PHRASES = (AT_THIS_SIZE, NEEDS_FULL, "needs <name> cells", FAILED)


def not_run_reason(why: str | BaseException) -> str:
    """A ``not run`` reason as one of :data:`NOT_RUN_PHRASES` (the original text as its detail):
    an experiment status (``not run: not part of this size ...``, ``not run: <error>``) or a
    measure's error (a DataError naming ``where``, a missing scheduler, one value of a param)."""
    text = str(why).removeprefix("not run: ").strip()
    if text.startswith(NOT_RUN_PHRASES[:2]) or text.startswith("needs "):
        return text
    if isinstance(why, DataError):
        names = [n.strip() for n in why.problem.removeprefix("no results for ").split(",")]
        if why.path in ("scheduler", "placement", "solver") and why.problem.startswith(
            "no results for"
        ):
            return f"needs {' and '.join(names)} cells"
        return f"{AT_THIS_SIZE}: {text}"
    if isinstance(why, KeyError):
        return f"{AT_THIS_SIZE}: missing {why}"
    if isinstance(why, (ValueError, TypeError, ZeroDivisionError)):
        return f"{AT_THIS_SIZE}: {text}"
    if "not part of this size" in text:
        return NEEDS_FULL
    if text in ("", "not run"):
        return AT_THIS_SIZE
    return f"{FAILED}: {text}"
