"""Reports: ``report.md`` (PNG files linked from ``figures/``) and ``report.html`` (the same figures
embedded as base64 PNG), each with a claims table *claim — paper (range) — ours (spread over seeds) — outcome — reason*."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

CLAIM_COLUMNS = (
    "id", "claim", "figure", "paper", "paper_range", "ours", "spread", "outcome", "reason",
)  # fmt: skip
#: row colour per claim outcome
_OUTCOME_CLASS = {"reproduces": "yes", "direction only": "dir", "does not reproduce": "no"}


@dataclass
class Section:
    """One experiment in the report: text lines, named figures (PNG bytes) and tables."""

    title: str
    status: str = "ok"  # ok | not run: <reason>
    lines: list[str] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


def png(fig, dpi: int = 110) -> bytes:
    """Render a matplotlib Figure to PNG bytes and close it."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in s.lower()).strip("-")


def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    rows = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = [_fmt(r[c]).replace("|", "\\|").replace("\n", " ") for c in cols]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def _html_table(df: pd.DataFrame, claims: bool = False) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cls = ""
        if claims:
            cls = f" class='{_OUTCOME_CLASS.get(str(r.get('outcome', '')), 'nr')}'"
        cells = "".join(f"<td>{html.escape(_fmt(r[c]))}</td>" for c in df.columns)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


_CSS = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0;font-size:90%}"
    "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
    "tr.yes td{background:#e8f6e8}tr.dir td{background:#fdf6e0}tr.no td{background:#fbe9e9}tr.nr td{background:#f3f3f3}"
    "img{max-width:100%;border:1px solid #eee}"
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
    claims = claims.reindex(columns=list(CLAIM_COLUMNS))
    claims.to_csv(out / "claims.csv", index=False)
    md = [f"# {title}", "", *preamble, "", "## Claims", "", _md_table(claims), ""]
    h = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        *(f"<p>{html.escape(p)}</p>" for p in preamble if p),
        "<h2>Claims</h2>",
        _html_table(claims, claims=True),
    ]
    for s in sections:
        md += [f"## {s.title}", "", f"Status: {s.status}", ""]
        h += [f"<h2>{html.escape(s.title)}</h2>", f"<p><b>Status:</b> {html.escape(s.status)}</p>"]
        for line in s.lines:
            md += [line, ""]
            h.append(f"<p>{html.escape(line)}</p>")
        for name, df in s.tables:
            md += [f"**{name}**", "", _md_table(df), ""]
            h += [f"<h3>{html.escape(name)}</h3>", _html_table(df)]
        for name, data in s.figures:
            fn = f"{len(list(figdir.glob('*.png'))) + 1:02d}-{_slug(name)[:60].strip('-')}.png"
            (figdir / fn).write_bytes(data)
            md += [f"![{name}](figures/{fn})", ""]
            b64 = base64.b64encode(data).decode("ascii")
            h += [
                f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,{b64}'>",
                f"<figcaption>{html.escape(name)}</figcaption></figure>",
            ]
    h.append("</body></html>")
    paths = {"md": out / "report.md", "html": out / "report.html", "claims": out / "claims.csv"}
    paths["md"].write_text("\n".join(md), encoding="utf-8")
    paths["html"].write_text("\n".join(h), encoding="utf-8")
    return paths
