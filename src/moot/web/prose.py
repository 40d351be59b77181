"""A transcript's section as readable text: its Markdown rendered, its record-keeping lines set aside.

Records are untrusted input, so the renderer takes no HTML from them: markdown-it with raw HTML off (a tag in a
turn shows as text), no images (a record may not make the page load anything), and links only to ``http``,
``https`` and ``mailto`` addresses, which leave the page with no referrer (any other link is its text). The page's Content-Security-Policy
stands behind it.

Record-keeping lines are what moot and the protocols write for checking, not for reading: a comment line (the
hash chain's head, ``<!-- moot-chain … -->``) and a line carrying a digest (a sealed answer's commitment,
``sha256:…``). The rendered view folds them under the turn; the source view shows every line where it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from moot.web.transcript import Line, Section

_SAFE_LINK = re.compile(r"^(https?:|mailto:)", re.IGNORECASE)
_KEEPING = re.compile(r"^\s*<!--.*-->\s*$|\b(sha256:)?[0-9a-f]{64}\b")


def _markdown() -> MarkdownIt:
    # A line break in a turn is kept: the protocols write one field per line ("Status: DONE").
    md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"]).disable("image")

    def link_open(renderer: Any, tokens: Sequence[Any], index: int, options: Any, env: Any) -> str:
        token = tokens[index]
        if _SAFE_LINK.match(str(token.attrGet("href") or "")):
            token.attrSet("rel", "nofollow noopener noreferrer")
        else:  # a path or an anchor means nothing on this page: its text stays, as text
            token.attrs.pop("href", None)
        return str(renderer.renderToken(tokens, index, options, env))

    def under_the_title(state: Any) -> None:
        """A record's own headings sit under the page's and the section's: ``#`` is an h4."""
        for token in state.tokens:
            if token.type in ("heading_open", "heading_close"):
                token.tag = f"h{min(6, int(token.tag[1]) + 3)}"

    md.add_render_rule("link_open", link_open)
    md.core.ruler.push("under_the_title", under_the_title)
    return md


_MD = _markdown()


def _shown(line: Line) -> str:
    return f"{line.text} … ({line.more:,} more characters on this line)" if line.more else line.text


@dataclass
class Prose:
    """A section as the rendered view shows it: its text as HTML, and its record-keeping lines."""

    html: Markup
    keeping: list[Line]


def is_keeping(line: Line) -> bool:
    """Whether ``line`` is record-keeping (see the module docstring)."""
    return bool(_KEEPING.search(line.text))


def prose(section: Section) -> Prose:
    """``section``'s Markdown rendered without its heading line (the section's title shows it) and without its
    record-keeping lines, which come back apart."""
    lines = section.lines
    if (
        lines
        and not section.continued
        and lines[0].text.startswith("## ")
        and lines[0].text[3:].strip() == section.title
    ):
        lines = lines[1:]
    keeping = [line for line in lines if is_keeping(line)]
    kept = set(map(id, keeping))
    text = "\n".join(_shown(line) for line in lines if id(line) not in kept)
    return Prose(Markup(_MD.render(text)), keeping)
