"""Reports: ``report.md`` (PNG files linked from ``figures/``) and ``report.html`` (the same figures
embedded as base64 PNG), each with a claims table *claim — paper (range) — ours (spread over seeds) —
outcome — reason*. Tables are rendered by pandas (``to_markdown`` / ``to_html``), numbers in fixed
notation, units in the headers."""

from __future__ import annotations

import base64
import html
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
    """Render a matplotlib Figure (or the figure of an Axes) to PNG bytes and close it."""
    import matplotlib.pyplot as plt  # heavy: imported on use
    from matplotlib.figure import Figure  # heavy: imported on use

    if isinstance(fig, (list, tuple, np.ndarray)):  # several panels of one figure
        fig = np.ravel(fig)[0]
    while not isinstance(fig, Figure):  # Axes -> (Sub)Figure -> root Figure
        fig = fig.figure
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
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


def _inline_html(text: str) -> str:
    """Escaped HTML of one line of text; `code` spans become <code> (no raw backticks)."""
    parts = html.escape(str(text)).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: keep it as a character
        parts = [*parts[:-2], parts[-2] + "&#96;" + parts[-1]]
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


#: claim outcomes (analysis.claims): the first counts as reproduced in the headline
REPRODUCES = "reproduces"
_HOLDS_TO_OUTCOME = {"yes": REPRODUCES, "no": "does not reproduce"}
_CLAIM_ORDER = (
    "id", "claim", "figure", "paper", "paper_range", "ours", "spread", "outcome", "reason", "note",
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
    return view[keep].fillna("")


def _cells(df: pd.DataFrame, fmt) -> pd.DataFrame:
    """Every cell as text (numbers in fixed notation with units in the headers), through ``fmt``."""
    return with_units(df).map(lambda v: fmt("" if v is None else str(v)))


def md_table(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (``DataFrame.to_markdown``)."""
    cells = _cells(df, lambda v: v.replace("|", "\\|").replace("\n", " "))
    return cells.to_markdown(index=False, disable_numparse=True)


def html_table(df: pd.DataFrame, row_classes: pd.Series | None = None) -> str:
    """An HTML table (``DataFrame.to_html``; text escaped, `code` as <code>); ``row_classes``
    gives each row a CSS class."""
    cells = _cells(df, _inline_html)
    cells.columns = [_inline_html(c) for c in cells.columns]
    out = cells.to_html(index=False, escape=False, border=0, na_rep="")
    if row_classes is not None:  # pandas cannot class rows: tag the <tr>s of the body in order
        head, _, body = out.partition("<tbody>")
        rows = body.split("<tr>")
        body = rows[0] + "".join(
            f"<tr class='{c}'>{r}" for c, r in zip(row_classes, rows[1:], strict=True)
        )
        out = f"{head}<tbody>{body}"
    return out


def _outcome_class(outcome: str) -> str:
    if outcome == REPRODUCES:
        return "yes"
    if outcome.startswith("not run") or not outcome:
        return "nr"
    return "partial" if outcome == "direction only" else "no"


_CSS = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0;font-size:90%}"
    "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
    "tr.yes td{background:#e8f6e8}tr.no td{background:#fbe9e9}tr.nr td{background:#f3f3f3}"
    "tr.partial td{background:#fdf6e0}img{max-width:100%;border:1px solid #eee}"
)


def write_report(
    out_dir: str | Path,
    title: str,
    claims: pd.DataFrame,
    sections: list[Section],
    preamble: list[str] = (),
) -> dict[str, Path]:
    """Write ``report.md``, ``report.html``, ``claims.csv`` and ``figures/*.png`` under ``out_dir``."""
    out = Path(out_dir)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    claims.to_csv(out / "claims.csv", index=False)
    view = claims_view(claims)
    md = [f"# {title}", "", *preamble, "", "## Claims", "", md_table(view), ""]
    h = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        *(f"<p>{_inline_html(p)}</p>" for p in preamble if p),
        "<h2>Claims</h2>",
        html_table(view, view["outcome"].map(_outcome_class)),
    ]
    for s in sections:
        md += [f"## {s.title}", "", f"Status: {s.status}", ""]
        h += [
            f"<h2>{_inline_html(s.title)}</h2>",
            f"<p><b>Status:</b> {_inline_html(s.status)}</p>",
        ]
        for line in s.lines:
            md += [line, ""]
            h.append(f"<p>{_inline_html(line)}</p>")
        for name, df in s.tables:
            md += [f"**{name}**", "", md_table(df), ""]
            h += [f"<h3>{_inline_html(name)}</h3>", html_table(df)]
        for name, data in s.figures:
            fn = f"{len(list(figdir.glob('*.png'))) + 1:02d}-{_slug(name)[:60].strip('-')}.png"
            (figdir / fn).write_bytes(data)
            md += [f"![{name}](figures/{fn})", ""]
            b64 = base64.b64encode(data).decode("ascii")
            h += [
                f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,{b64}'>",
                f"<figcaption>{_inline_html(name)}</figcaption></figure>",
            ]
    h.append("</body></html>")
    paths = {"md": out / "report.md", "html": out / "report.html", "claims": out / "claims.csv"}
    paths["md"].write_text("\n".join(md), encoding="utf-8")
    paths["html"].write_text("\n".join(h), encoding="utf-8")
    return paths
