"""The HTML report's markup: `el` makes every element, `clean` makes text inert.

Every string from a suite, a model or a server is hostile. Nothing reaches the page except
through `el` (tags and attribute names are the report's own; every child that is not markup
made by `el`, and every attribute value, is cleaned and escaped), so no text can open a tag, an
attribute, a script or a style. The page is also well-formed XML, which lets tests parse it.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from ruledrift.text import terminal_lines, terminal_safe, xml_safe

_VOID = frozenset({"meta", "br", "hr", "col"})  # HTML elements that never have content
_SVG_EMPTY = frozenset({"path", "line", "circle", "rect", "polygon"})  # closed with `/>` if empty


class Html(str):
    """Markup made by `el` (or a constant of this module): the only text inserted unescaped."""

    __slots__ = ()


Child = Html | str | int | None
Attribute = str | int | float | None


def clean(text: str, *, lines: bool = False) -> str:
    """`text` as inert page text: control characters (terminal escapes, bidi overrides, line
    separators) and lone surrogates as visible escapes or U+FFFD, what XML forbids escaped, and
    `& < > " '` as entities. With `lines`, line breaks stay (else they show as ` ⏎ `)."""
    safe = terminal_lines(text) if lines else terminal_safe(text)
    return html.escape(xml_safe(safe), quote=True)


def el(tag: str, *children: Child | Iterable[Child], **attributes: Attribute) -> Html:
    """`<tag attributes>children</tag>`. Attribute names are Python names (`class_` is
    `class`, `data_rule` is `data-rule`); a None child or attribute is left out."""
    attrs = "".join(
        f' {name.rstrip("_").replace("_", "-")}="{clean(_number(value))}"'
        for name, value in attributes.items()
        if value is not None
    )
    if tag in _VOID or (not children and tag in _SVG_EMPTY):
        return Html(f"<{tag}{attrs} />")
    return Html(f"<{tag}{attrs}>{_children(children)}</{tag}>")


def _children(children: Sequence[Child | Iterable[Child]]) -> str:
    parts: list[str] = []
    for child in children:
        if child is None:
            continue
        if isinstance(child, str | int):
            parts.append(_child(child))
        else:
            parts.extend(_child(c) for c in child if c is not None)
    return "".join(parts)


def _child(child: Html | str | int) -> str:
    if isinstance(child, Html):
        return child
    return clean(str(child), lines=True)


def _number(value: str | int | float) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)
