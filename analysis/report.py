"""Reports: ``report.md`` (PNG files linked from ``figures/``) and ``report.html`` (the same figures
embedded as base64 PNG), each with a claims table *claim — paper (range) — ours (spread over seeds) —
outcome — reason*. Both come from Jinja2 templates (``templates/report.md.j2``,
``templates/report.html.j2``); prose is Markdown (rendered to HTML by markdown-it-py), tables are
pandas' (``to_markdown`` / a ``Styler``), numbers in fixed notation, units in the headers. Figures
are saved with a tight bounding box, so a legend placed beside the axes stays in the image."""

from __future__ import annotations

import base64
import io
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .tables import with_units


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


def _markdown():
    from markdown_it import MarkdownIt  # heavy: imported on use (reports only)

    return MarkdownIt("commonmark", {"html": False})  # raw HTML in the text is escaped


def prose_html(text: str, inline: bool = False) -> str:
    """Markdown ``text`` as HTML (markdown-it-py; raw HTML escaped); ``inline``: no ``<p>``. A
    backtick left unpaired stays a character (``&#96;``), never a raw backtick."""
    md = _markdown()
    out = md.renderInline(str(text)) if inline else md.render(str(text))
    return out.replace("`", "&#96;")


#: claim outcomes (analysis.claims): the first counts as reproduced in the headline
REPRODUCES = "reproduces"
_HOLDS_TO_OUTCOME = {"yes": REPRODUCES, "no": "does not reproduce"}
_CLAIM_ORDER = (
    "id", "claim", "figure", "paper", "paper_range", "ours", "spread", "outcome", "full_size",
    "reason", "note",
)  # fmt: skip


def claim_outcomes(claims: pd.DataFrame) -> pd.Series:
    """Each claim's outcome: the ``outcome`` column (``reproduces`` | ``direction only`` |
    ``does not reproduce`` | ``not run``), or, for tables without it, the ``holds`` verdict
    (yes -> reproduces, no -> does not reproduce, anything else as written)."""
    if "outcome" in claims:
        return claims["outcome"].fillna("").astype(str)
    if "holds" in claims:
        h = claims["holds"].fillna("").astype(str)
        return h.map(lambda v: _HOLDS_TO_OUTCOME.get(v, v))
    return pd.Series("", index=claims.index)


def headline(claims: pd.DataFrame) -> str:
    """``N of M claims reproduce`` (+ how many fall in each other outcome)."""
    out = claim_outcomes(claims)
    n = int((out == REPRODUCES).sum())
    rest = out[out != REPRODUCES].map(lambda v: "not run" if v.startswith("not run") else v)
    counts = rest.value_counts()
    others = ", ".join(f"{k} {v}" for k, v in counts.items())
    return f"{n} of {len(out)} claims reproduce" + (f" ({others})" if others else "")


def claims_view(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table as the report shows it: an ``outcome`` column (see :func:`claim_outcomes`)
    in place of ``holds``, known columns first, empty columns dropped."""
    view = claims.drop(columns=["holds"], errors="ignore").assign(outcome=claim_outcomes(claims))
    first = [c for c in _CLAIM_ORDER if c in view]
    view = view[first + [c for c in view.columns if c not in first]]
    keep = [c for c in view.columns if c in ("id", "outcome") or view[c].astype(str).ne("").any()]
    return view[keep].astype(object).fillna("")  # object: "" is no float (pandas 4 refuses)


def _cells(df: pd.DataFrame, fmt) -> pd.DataFrame:
    """Every cell as text (numbers in fixed notation with units in the headers), through ``fmt``."""
    return with_units(df).map(lambda v: fmt("" if v is None else str(v)))


def md_table(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (``DataFrame.to_markdown``)."""
    cells = _cells(df, lambda v: v.replace("|", "\\|").replace("\n", " "))
    return cells.to_markdown(index=False, disable_numparse=True)


def html_table(df: pd.DataFrame, row_classes: pd.Series | None = None, uuid: str = "t") -> str:
    """An HTML table (a pandas ``Styler``; cells and headers as inline Markdown: text escaped,
    `code` as <code>); ``row_classes`` gives every cell of each row a CSS class; ``uuid`` makes
    the element ids unique in a page."""
    cells = _cells(df, str)
    style = cells.style.hide(axis="index").set_uuid(uuid)
    style = style.format(lambda v: prose_html(v, inline=True))
    style = style.format_index(lambda v: prose_html(v, inline=True), axis="columns")
    if row_classes is not None:
        classes = pd.DataFrame(
            {c: list(row_classes) for c in cells.columns}, index=cells.index, dtype=object
        )
        style = style.set_td_classes(classes)
    return style.to_html()


def _outcome_class(outcome: str) -> str:
    if outcome == REPRODUCES:
        return "yes"
    if outcome.startswith("not run") or not outcome:
        return "nr"
    return "partial" if outcome == "direction only" else "no"


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
    preamble: list[str] = (),
) -> dict[str, Path]:
    """Write ``report.md``, ``report.html``, ``claims.csv`` and ``figures/*.png`` under ``out_dir``
    (from the templates ``report.md.j2`` and ``report.html.j2``)."""
    # heavy: imported on use (Jinja2's): HTML rendered here, not escaped again
    from markupsafe import Markup

    out = Path(out_dir)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    claims.to_csv(out / "claims.csv", index=False)
    view = claims_view(claims)
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
        "claims_md": md_table(view),
        "claims_html": Markup(html_table(view, view["outcome"].map(_outcome_class), "claims")),
        "sections": docs,
    }
    paths = {"md": out / "report.md", "html": out / "report.html", "claims": out / "claims.csv"}
    paths["md"].write_text(env.get_template("report.md.j2").render(doc), encoding="utf-8")
    paths["html"].write_text(env.get_template("report.html.j2").render(doc), encoding="utf-8")
    return paths
