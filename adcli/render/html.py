"""A result's markdown rendering as a small HTML fragment (rich display in Jupyter,
render/notebook.py): tables become ``<table>``, the rest paragraphs; every piece of text is escaped."""

from __future__ import annotations

import html
import re


def markdown_html(markdown: str) -> str:
    """The HTML fragment of ``markdown`` as the renderers write it (tables, lines; see _inline)."""
    out, table = [], []

    def flush() -> None:
        if not table:
            return
        rows = [[c.strip() for c in row.strip().strip("|").split("|")] for row in table
                if not re.fullmatch(r"\|?[\s:|-]+\|?", row.strip())]
        head, body = rows[0], rows[1:]
        out.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>"
                   + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                   + "</tbody></table>")
        table.clear()

    for line in markdown.splitlines():
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        flush()
        if line.strip():
            out.append(f"<p>{_inline(line.strip())}</p>")
    flush()
    return "\n".join(out)


def _inline(text: str) -> str:
    """Markdown's `code`, **bold** and _italic_ (the renderers use no other), escaped."""
    text = text.replace("\\|", "|")
    text = html.escape(text)
    text = re.sub(r"`([^`]*)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)
    return re.sub(r"(?<![\w])_([^_]+)_(?![\w])", r"<i>\1</i>", text)
