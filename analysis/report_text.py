"""Text of a report: Markdown prose to HTML (markdown-it-py, raw HTML escaped) and tables as
Markdown (``DataFrame.to_markdown``) or HTML (a pandas ``Styler``), numbers in fixed notation with
units in the headers; long reasons cut to :data:`REASON_CHARS` (footnotes in Markdown, <details>
in HTML). Used by :mod:`.report`."""

from __future__ import annotations

import pandas as pd

from .tables import with_units

#: the longest reason a Markdown claims table shows; the whole text goes to a footnote (HTML:
#: a <details> element)
REASON_CHARS = 160


def _markdown():
    from markdown_it import MarkdownIt  # heavy: imported on use (reports only)

    return MarkdownIt("commonmark", {"html": False})  # raw HTML in the text is escaped


def prose_html(text: str, inline: bool = False) -> str:
    """Markdown ``text`` as HTML (markdown-it-py; raw HTML escaped); ``inline``: no ``<p>``. A
    backtick left unpaired stays a character (``&#96;``), never a raw backtick."""
    md = _markdown()
    out = md.renderInline(str(text)) if inline else md.render(str(text))
    return out.replace("`", "&#96;")


def short_text(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` cut at a word to at most ``limit`` characters, ending in "…" when cut."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:(")
    return cut + "…"


def footnoted(df: pd.DataFrame, tag: str, col: str = "reason") -> tuple[pd.DataFrame, list[str]]:
    """``df`` with every ``col`` cell longer than :data:`REASON_CHARS` cut (:func:`short_text`)
    and marked ``[^<tag>-<k>]``; the footnotes (``[^<tag>-<k>]: <whole text>``) returned apart."""
    if col not in df:
        return df, []
    notes: list[str] = []
    cells: list[str] = []
    for v in df[col].astype(str):
        if len(v) <= REASON_CHARS:
            cells.append(v)
            continue
        key = f"{tag}-{len(notes) + 1}"
        mark = f" [^{key}]"
        cells.append(short_text(v, REASON_CHARS - len(mark)) + mark)
        notes.append(f"[^{key}]: {' '.join(v.split())}")
    return df.assign(**{col: cells}), notes


def _cells(df: pd.DataFrame, fmt) -> pd.DataFrame:
    """Every cell as text (numbers in fixed notation with units in the headers), through ``fmt``."""
    return with_units(df).map(lambda v: fmt("" if v is None else str(v)))


def md_table(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (``DataFrame.to_markdown``)."""
    cells = _cells(df, lambda v: v.replace("|", "\\|").replace("\n", " "))
    return cells.to_markdown(index=False, disable_numparse=True)


def _details(v: str) -> str:
    """A long cell as <details>: the short text as its summary, the whole text inside."""
    if len(v) <= REASON_CHARS:
        return prose_html(v, inline=True)
    short, whole = prose_html(short_text(v), inline=True), prose_html(v, inline=True)
    return f"<details><summary>{short}</summary>{whole}</details>"


def html_table(
    df: pd.DataFrame,
    row_classes: pd.Series | None = None,
    uuid: str = "t",
    details: tuple[str, ...] = (),
) -> str:
    """An HTML table (a pandas ``Styler``; cells and headers as inline Markdown: text escaped,
    `code` as <code>); ``row_classes`` gives every cell of each row a CSS class; ``uuid`` makes
    the element ids unique in a page; cells of the ``details`` columns longer than
    :data:`REASON_CHARS` show their first words and open to the whole text (<details>)."""
    cells = _cells(df, str)
    style = cells.style.hide(axis="index").set_uuid(uuid)
    style = style.format(lambda v: prose_html(v, inline=True))
    long = [c for c in details if c in cells]
    if long:
        style = style.format(_details, subset=long)
    style = style.format_index(lambda v: prose_html(v, inline=True), axis="columns")
    if row_classes is not None:
        classes = pd.DataFrame(
            {c: list(row_classes) for c in cells.columns}, index=cells.index, dtype=object
        )
        style = style.set_td_classes(classes)
    return style.to_html()
