"""Reports: ``report.md`` (PNG files linked from ``figures/``) and ``report.html`` (the same figures
embedded as base64 PNG), each with claims tables *claim — paper (range) — ours (spread over seeds) —
outcome — reason*: the papers' own claims and the package's own checks apart, counted apart in the
headline (:func:`headline`). Both come from Jinja2 templates (``templates/report.md.j2``,
``templates/report.html.j2``); prose and tables are rendered by :mod:`.report_text`. Figures are
saved with a tight bounding box, so a legend placed beside the axes stays in the image."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError

# (REASON_CHARS, short_text: re-exported, the old import path of .report_text's names)
from .report_text import REASON_CHARS, footnoted, html_table, md_table, prose_html, short_text  # noqa: F401


@dataclass
class Section:
    """One experiment in the report: text lines, named figures (PNG bytes) and tables."""

    title: str
    status: str = "ok"  # ok | not run: <reason>
    lines: list[str] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


def png(fig, dpi: int = 110) -> bytes:
    """Render a matplotlib Figure (or the figure of an Axes) to PNG bytes and close it; the image
    is cropped to the drawn artists (``bbox_inches="tight"``), legends outside the axes included."""
    import matplotlib.pyplot as plt  # heavy: imported on use
    from matplotlib.figure import Figure  # heavy: imported on use

    if isinstance(fig, (list, tuple, np.ndarray)):  # several panels of one figure
        fig = np.ravel(fig)[0]
    while not isinstance(fig, Figure):  # Axes -> (Sub)Figure -> root Figure
        fig = fig.figure
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")  # legends beside the axes too
    plt.close(fig)
    return buf.getvalue()


@contextmanager
def closing_failed_figures():
    """Close the figures opened inside the block if it raises (a plot that failed half-way)."""
    import matplotlib.pyplot as plt  # heavy: imported on use

    before = set(plt.get_fignums())
    try:
        yield
    except BaseException:
        for n in set(plt.get_fignums()) - before:
            plt.close(n)
        raise


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in s.lower()).strip("-")


#: claim outcomes (analysis.claims): a paper claim reproduces, a package check passes
REPRODUCES = "reproduces"
PASSES = "passes"
_HOLDS_TO_OUTCOME = {"yes": REPRODUCES, "no": "does not reproduce"}
#: the size that can judge leads: the stored full-size outcome, then this run's
_CLAIM_ORDER = (
    "id", "study", "claim", "figure", "section", "paper", "paper_range", "full_size", "outcome",
    "ours", "spread", "reason", "note",
)  # fmt: skip
#: columns of the claims table kept in claims.csv but not shown (``full_size`` says it)
_HIDDEN = ("full_outcome", "full_ours")
#: the claims tables of a report, one per kind (analysis.claims_schema.KINDS)
KIND_TABLES = {"paper": "Paper claims (the paper's own words)", "check": "Package checks (ours)"}


def claim_outcomes(claims: pd.DataFrame) -> pd.Series:
    """Each claim's outcome: the ``outcome`` column (``reproduces`` | ``direction only`` |
    ``does not reproduce`` | ``not run`` for paper claims, ``passes`` | ``fails`` | ``not run`` for
    package checks), or, for tables without it, the ``holds`` verdict (yes -> reproduces, no ->
    does not reproduce, anything else as written)."""
    if "outcome" in claims:
        return claims["outcome"].fillna("").astype(str)
    if "holds" in claims:
        h = claims["holds"].fillna("").astype(str)
        return h.map(lambda v: _HOLDS_TO_OUTCOME.get(v, v))
    return pd.Series("", index=claims.index)


def judged_outcomes(claims: pd.DataFrame) -> pd.Series:
    """The outcome a headline counts: the stored full-size one (``full_outcome``) where there is
    one, else this run's (:func:`claim_outcomes`)."""
    run = claim_outcomes(claims)
    if "full_outcome" not in claims:
        return run
    full = claims["full_outcome"].fillna("").astype(str)
    return full.where(full != "", run)


def claim_counts(claims: pd.DataFrame, outcomes: pd.Series | None = None) -> dict[str, dict]:
    """Paper claims and package checks counted apart (the ``kind`` column):
    ``{"paper": {n, reproduces, direction only, does not reproduce, not run}, "check": {n, passes,
    fails, not run}}`` of ``outcomes`` (default :func:`judged_outcomes`: full size where stored);
    any ``not run: <reason>`` counts as ``not run``."""
    if "kind" not in claims:
        raise DataError("kind", "the claims table has no kind column: paper claims and package "
                        "checks cannot be counted apart")  # fmt: skip
    out = judged_outcomes(claims) if outcomes is None else outcomes
    out = out.map(lambda v: "not run" if v.startswith("not run") else v)
    kind = claims["kind"].astype(str)
    unknown = sorted(set(kind) - set(KIND_TABLES))
    if unknown:
        raise DataError("kind", f"expected paper or check, got {unknown[0]!r}")
    keys = {"paper": (REPRODUCES, "direction only", "does not reproduce", "not run"),
            "check": (PASSES, "fails", "not run")}  # fmt: skip
    counts = {}
    for k, names in keys.items():
        o = out[kind == k]
        odd = sorted(set(o) - set(names))
        if odd:
            raise DataError("outcome", f"a {k} row has outcome {odd[0]!r}; expected one of {names}")
        counts[k] = {"n": int(o.size), **{v: int((o == v).sum()) for v in names}}
    return counts


def count_line(counts: dict[str, dict[str, int]]) -> str:
    """``paper claims: a of n reproduce, b in direction, c do not[, d not run]; package checks: x
    of m pass[, y fail][, z not run]``."""
    p, c = counts["paper"], counts["check"]
    paper = (f"paper claims: {p[REPRODUCES]} of {p['n']} reproduce, {p['direction only']} in "
             f"direction, {p['does not reproduce']} do not")  # fmt: skip
    paper += f", {p['not run']} not run" if p["not run"] else ""
    check = f"package checks: {c[PASSES]} of {c['n']} pass" if c["n"] else "package checks: none"
    check += (f", {c['fails']} fail" if c["fails"] else "") + (
        f", {c['not run']} not run" if c["not run"] else ""
    )
    return f"{paper}; {check}"


def _counts(claims: pd.DataFrame) -> dict:
    """:func:`claim_counts`; with a ``full_outcome`` column also ``at_full_size`` (claims judged
    at full size, per kind) and ``this_run`` (this run's own outcomes, counted alone)."""
    c: dict = claim_counts(claims)
    if "full_outcome" in claims:
        full = claims["full_outcome"].fillna("").astype(str) != ""
        kind = claims["kind"].astype(str)
        c["at_full_size"] = {k: int((full & (kind == k)).sum()) for k in KIND_TABLES}
        c["this_run"] = claim_counts(claims, claim_outcomes(claims))
    return c


def headline_counts(claims: pd.DataFrame) -> dict[str, dict]:
    """:func:`claim_counts` per study (the ``study`` column: ``themis``, ``pal``, in table order)
    and in ``total`` (the total alone without a ``study`` column); with stored full-size outcomes
    (``full_outcome``) each also has ``at_full_size`` and ``this_run`` (:func:`_counts`)."""
    counts = {}
    if "study" in claims:
        for s in claims["study"].astype(str).unique():
            counts[s] = _counts(claims[claims["study"].astype(str) == s])
    return counts | {"total": _counts(claims)}


def _where_judged(c: dict, size: str) -> str:
    """`` (full size: a of n paper claims, b of m checks; the rest at <size>)``, or '' without
    stored full-size outcomes."""
    if "at_full_size" not in c:
        return ""
    k = c["at_full_size"]
    n = {x: c[x]["n"] for x in KIND_TABLES}
    if not k["paper"] + k["check"]:
        return f" (none judged at full size: all at {size})"
    checks = f", {k['check']} of {n['check']} checks" if n["check"] else ""
    rest = "" if k["paper"] + k["check"] == n["paper"] + n["check"] else f"; the rest at {size}"
    return f" (judged at full size: {k['paper']} of {n['paper']} paper claims{checks}{rest})"


def headline_lines(
    claims: pd.DataFrame, size: str = "this run's size", this_run: bool = False
) -> list[str]:
    """One line per study (``THEMIS: paper claims: ...; package checks: ...``), then the total when
    there are several studies: paper claims and package checks are never counted together. Each
    claim counts its full-size outcome where one is stored (the line says how many), else its
    outcome at ``size``; ``this_run``: count this run's own outcomes instead."""
    counts = headline_counts(claims)
    studies = [k for k in counts if k != "total"]

    def line(c: dict) -> str:
        if this_run:
            return count_line(c.get("this_run", c))
        return count_line(c) + _where_judged(c, size)

    lines = [f"{s.upper()}: {line(counts[s])}" for s in studies]
    if len(studies) != 1:
        lines.append(f"{'Total: ' if studies else ''}{line(counts['total'])}")
    return lines


def headline(claims: pd.DataFrame, size: str = "this run's size") -> str:
    """The headline: :func:`headline_lines` joined as sentences (no final full stop)."""
    return ". ".join(headline_lines(claims, size))


def claims_view(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table as the report shows it: an ``outcome`` column (see :func:`claim_outcomes`)
    in place of ``holds``, known columns first (the full size before this run's), empty columns
    and ``full_outcome`` (``full_size`` says it) dropped."""
    view = claims.drop(columns=["holds", *_HIDDEN], errors="ignore")
    view = view.assign(outcome=claim_outcomes(claims))
    first = [c for c in _CLAIM_ORDER if c in view]
    view = view[first + [c for c in view.columns if c not in first]]
    keep = [c for c in view.columns if c in ("id", "outcome") or view[c].astype(str).ne("").any()]
    return view[keep].astype(object).fillna("")  # object: "" is no float (pandas 4 refuses)


def claims_tables(claims: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The report's claims tables: one per kind (paper claims, then package checks; the ``kind``
    column dropped), or one unnamed table when the claims have no ``kind``."""
    if "kind" not in claims:
        return [("", claims_view(claims))]
    kind = claims["kind"].astype(str)
    return [(name, claims_view(claims[kind == k].drop(columns=["kind"])))
            for k, name in KIND_TABLES.items() if (kind == k).any()]  # fmt: skip


def size_headers(view: pd.DataFrame, size: str | None) -> pd.DataFrame:
    """A claims view's headers saying the size of each outcome: ``full size``, then ``<size>
    outcome`` / ``<size> ours`` / ``<size> spread`` (unchanged when ``size`` is None)."""
    if size is None:
        return view
    names = {"full_size": "full size", **{c: f"{size} {c}" for c in ("outcome", "ours", "spread")}}
    return view.rename(columns=names)


def _outcome_class(outcome: str) -> str:
    if outcome in (REPRODUCES, PASSES):
        return "yes"
    if outcome.startswith("not run") or not outcome:
        return "nr"
    return "partial" if outcome == "direction only" else "no"


def _claims_doc(j: int, name: str, view: pd.DataFrame, size: str | None) -> dict:
    """One claims table for the templates: name, Markdown (+ footnotes), HTML."""
    from markupsafe import Markup  # heavy: imported on use (Jinja2's)

    classes = view["outcome"].map(_outcome_class)
    view = size_headers(view, size)
    short, notes = footnoted(view, f"c{j}")
    html = html_table(view, classes, f"c{j}", details=("reason",))
    return {"name": name, "md": md_table(short), "notes": notes, "html": Markup(html)}


def _templates():
    # heavy: imported on use (reports only)
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    return Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=select_autoescape(enabled_extensions=("html.j2",), default=False),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )


def write_report(
    out_dir: str | Path,
    title: str,
    claims: pd.DataFrame,
    sections: list[Section],
    preamble: Sequence[str] = (),
    size: str | None = None,
) -> dict[str, Path]:
    """Write ``report.md``, ``report.html``, ``claims.csv`` and ``figures/*.png`` under ``out_dir``
    (from the templates ``report.md.j2`` and ``report.html.j2``). ``size``: the run's size, named
    in the claims tables' headers next to the full size; reasons over :data:`REASON_CHARS`
    characters are cut in Markdown (the whole text in a footnote) and fold in HTML."""
    # heavy: imported on use (Jinja2's): HTML rendered here, not escaped again
    from markupsafe import Markup

    out = Path(out_dir)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    claims.to_csv(out / "claims.csv", index=False)
    n_png = len(list(figdir.glob("*.png")))
    docs = []
    for k, s in enumerate(sections):
        figures = []
        for name, data in s.figures:
            n_png += 1
            fn = f"{n_png:02d}-{_slug(name)[:60].strip('-')}.png"
            (figdir / fn).write_bytes(data)
            b64 = base64.b64encode(data).decode("ascii")
            figures.append({"name": name, "file": f"figures/{fn}", "b64": b64})
        docs.append(
            {
                "title": s.title,
                "status": s.status,
                "lines": s.lines,
                "tables": [
                    {
                        "name": n,
                        "md": md_table(df),
                        "html": Markup(html_table(df, uuid=f"s{k}t{j}")),
                    }
                    for j, (n, df) in enumerate(s.tables)
                ],
                "figures": figures,
            }
        )
    env = _templates()
    env.filters["markdown"] = lambda text: Markup(prose_html(text))
    env.filters["inline"] = lambda text: Markup(prose_html(text, inline=True))
    doc = {
        "title": title,
        "preamble": [p for p in preamble if p],
        "claims": [
            _claims_doc(j, name, view, size) for j, (name, view) in enumerate(claims_tables(claims))
        ],  # fmt: skip
        "sections": docs,
    }
    paths = {"md": out / "report.md", "html": out / "report.html", "claims": out / "claims.csv"}
    paths["md"].write_text(env.get_template("report.md.j2").render(doc), encoding="utf-8")
    paths["html"].write_text(env.get_template("report.html.j2").render(doc), encoding="utf-8")
    return paths
