"""The HTML report (`--html`): one self-contained page a person can open, archive or attach.

`page.py` lays out the page (the verdict, the grid, the probes; `render_html`), `chart.py` draws
the drift curve as inline SVG, and `markup.py` is the only way text reaches either: elements
made by `el`, every other string cleaned and escaped.
"""

from ruledrift.reports.html.page import render_html

__all__ = ["render_html"]
