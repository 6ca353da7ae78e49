"""Markdown as GitHub shows it: rendered by cmark-gfm (GitHub's own fork of cmark, through the
`cmarkgfm` bindings) with GitHub's extensions (tables, autolinks, strikethrough, task lists and
the tag filter), then parsed into an ElementTree so that a test can assert on the structure
(`.//blockquote//table`), not on the Markdown source.

Raw HTML is kept (`CMARK_OPT_UNSAFE`): GitHub keeps the tags RuleDrift uses (`<code>`,
`<details>`, `<summary>`, `<br>`) and its sanitizer then drops the rest, which is not what these
tests are about.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

_VOID = {"br", "hr", "img", "input", "meta", "link", "col", "wbr", "source", "area", "base"}


def to_html(markdown: str) -> str:
    """`markdown` rendered as GitHub renders a job summary or a comment."""
    options = Options.CMARK_OPT_UNSAFE
    html: str = cmarkgfm.github_flavored_markdown_to_html(markdown, options=options)
    return html


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = ET.Element("body")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = ET.SubElement(self.stack[-1], tag, {k: v or "" for k, v in attrs})
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ET.SubElement(self.stack[-1], tag, {k: v or "" for k, v in attrs})

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        for depth in range(len(self.stack) - 1, 0, -1):  # close up to the matching open tag
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        parent = self.stack[-1]
        if len(parent):
            last = parent[-1]
            last.tail = (last.tail or "") + data
        else:
            parent.text = (parent.text or "") + data


def render(markdown: str) -> ET.Element:
    """`markdown` rendered by GitHub's renderer, as a tree under a `<body>` element."""
    builder = _TreeBuilder()
    builder.feed(to_html(markdown))
    builder.close()
    return builder.root


def text(element: ET.Element) -> str:
    """All the text inside `element`, tags left out."""
    return "".join(element.itertext())


def table_rows(table: ET.Element) -> list[list[str]]:
    """The cells' text of each row of a rendered `<table>`, the header row first."""
    return [[text(cell).strip() for cell in row] for row in table.iter("tr")]


def loose_text(root: ET.Element) -> Iterator[str]:
    """The text of every paragraph, list item and heading: where Markdown that did not become
    what it meant to (a table, a quote, a heading) would be left as plain text."""
    for tag in ("p", "li", "h1", "h2", "h3", "h4", "td", "th", "summary"):
        for element in root.iter(tag):
            yield text(element)


def stray_markup(root: ET.Element) -> list[str]:
    """Lines of the rendered text that are Markdown syntax shown as text: a table's delimiter
    row or a row of cells, a quote marker, a heading marker, a fence."""
    stray = []
    for shown in loose_text(root):
        for line in shown.splitlines():
            bare = line.strip()
            if bare.startswith(("|", "> ", "#", "```")) or "|---" in bare:
                stray.append(bare)
    return stray
