"""Text from a profile is data: what it may contain is escaped before it reaches a terminal or
a markdown document (a profile is untrusted; users share them)."""

from __future__ import annotations

import re

from ..units import safe

_MARKDOWN = re.compile(r"([\\`*_\[\]<>&|])")  # what makes emphasis, code, links, raw HTML, entities, cells


def md_cell(text) -> str:
    """Text for a markdown table cell: escaped, one line, taken literally (no emphasis, code,
    link, HTML or entity; pipes escaped)."""
    return _MARKDOWN.sub(r"\\\1", safe(text))


def md_line(text) -> str:
    """Prose for one markdown line: escaped, with backticks, emphasis, links and HTML taken literally."""
    return _MARKDOWN.sub(r"\\\1", safe(text))


def md_code(text) -> str:
    """Inline code for markdown whatever backticks ``text`` holds (a longer fence, CommonMark)."""
    text = safe(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    if not longest:
        return f"`{text}`"
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


def md_code_cell(text) -> str:
    """Inline code inside a markdown table cell (GFM: a pipe is escaped even in code)."""
    return md_code(text).replace("|", "\\|")
