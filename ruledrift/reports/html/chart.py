"""The HTML report's drift curve: each rule's pass rate by depth, with its 95% Wilson interval,
as an inline SVG chart, and its legend. Made only through `markup.el`."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ruledrift.data import RunResult
from ruledrift.reports.html.markup import Html, el
from ruledrift.reports.sentences import cell_rate, pairing_words, variant_words, variants_heading
from ruledrift.results.findings import DriftCell, RuleDrift, RuleStory, drift_curve, rule_stories
from ruledrift.results.variants import read_variants, variant_curves

# Okabe and Ito's palette (told apart with colour blindness), each with its own marker and dash.
SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
_MARKERS = ("circle", "square", "triangle", "diamond", "down")
_DASHES = ("", "7 4", "2 3", "9 3 2 3")


@dataclass(frozen=True)
class _Frame:
    """The chart's geometry: pixels of the plot area and the depths on the x axis."""

    width: int = 1040
    height: int = 380
    left: int = 64
    right: int = 24  # 130 with threshold labels
    top: int = 16
    bottom: int = 56
    pad: int = 28  # between the y axis and the first depth, and the last depth and the edge
    first: int = 0
    last: int = 0

    def x(self, depth: float) -> float:
        span = self.width - self.left - self.right - 2 * self.pad
        if self.last == self.first:
            return self.left + self.pad + span / 2
        return self.left + self.pad + (depth - self.first) / (self.last - self.first) * span

    def y(self, rate: float) -> float:
        return self.top + (1 - rate) * (self.height - self.top - self.bottom)


def _no_bars(curves: Sequence[RuleDrift]) -> str:
    """Where the chart draws no interval: at depths whose runs were all identical."""
    if not any(cell.identical for curve in curves for cell in curve.cells):
        return ""
    return " (none where every answer was byte-identical: such runs are not independent)"


def drift_section(result: RunResult) -> Html | None:
    curves = drift_curve(result)
    if not curves:
        return None
    runs = "every run of" if result.policy.repeated else "the run of"
    return el(
        "section",
        el("h2", "Drift curve"),
        el(
            "p",
            f"Each rule's pass rate by depth (the background turns before the probe), over "
            f"{runs} each of its probes there. Bars: the 95% Wilson interval{_no_bars(curves)}. "
            "A filled marker: the probes at that depth passed; a hollow one: they did not.",
            class_="muted",
        ),
        drift_chart(curves, result),
        _legend(curves, rule_stories(result)),
        id="drift",
    )


def drift_chart(
    curves: Sequence[RuleDrift], result: RunResult, chart_id: str = "drift-chart"
) -> Html:
    """The SVG chart: one `<path class="drift-line" data-rule=ID>` per rule, an interval bar
    and a marker per depth, axes, labels, and the policy's thresholds."""
    depths = sorted({cell.after_turn for curve in curves for cell in curve.cells})
    labelled = result.policy.repeat == "auto" or result.policy.min_pass_rate is not None
    frame = _Frame(first=depths[0], last=depths[-1], right=130 if labelled else 24)
    series = [
        _series(index, curve, frame, len(curves), depths) for index, curve in enumerate(curves)
    ]
    return el(
        "svg",
        el("title", "Pass rate by depth, one line per rule"),
        _axes(frame, depths),
        _thresholds(frame, result),
        series,
        id=chart_id,
        role="img",
        viewBox=f"0 0 {frame.width} {frame.height}",
        width=frame.width,
        height=frame.height,
        class_="chart",
    )


def _axes(frame: _Frame, depths: Sequence[int]) -> Html:
    right = frame.width - frame.right
    bottom = frame.y(0)
    parts: list[Html] = []
    for rate in (0, 0.25, 0.5, 0.75, 1):
        y = frame.y(rate)
        parts.append(el("line", x1=frame.left, y1=y, x2=right, y2=y, class_="grid"))
        parts.append(el("text", f"{rate:.0%}", x=frame.left - 8, y=y + 4, class_="tick y"))
    step = max(1, -(-len(depths) // 16))  # at most 16 labels
    for depth in depths[::step]:
        x = frame.x(depth)
        parts.append(el("line", x1=x, y1=bottom, x2=x, y2=bottom + 5, class_="axis"))
        parts.append(el("text", str(depth), x=x, y=bottom + 19, class_="tick x"))
    parts += [
        el("line", x1=frame.left, y1=frame.top, x2=frame.left, y2=bottom, class_="axis"),
        el("line", x1=frame.left, y1=bottom, x2=right, y2=bottom, class_="axis"),
        el(
            "text",
            "depth: background turns before the probe (afterTurn)",
            class_="label",
            x=(frame.left + right) / 2,
            y=frame.height - 10,
        ),
        el(
            "text",
            "pass rate",
            class_="label",
            x=16,
            y=(frame.top + bottom) / 2,
            transform=f"rotate(-90 16 {(frame.top + bottom) / 2:.1f})",
        ),
    ]
    return el("g", parts, class_="axes")


def _thresholds(frame: _Frame, result: RunResult) -> Html | None:
    """Dashed lines at the rates the policy decides by, labelled at the right."""
    policy = result.policy
    if policy.repeat == "auto":
        lines = [(policy.holds_at, "holds at"), (policy.drifted_at, "drifted at")]
    elif policy.min_pass_rate is not None:
        lines = [(policy.min_pass_rate, "min pass rate")]
    else:
        return None
    parts = []
    for rate, name in lines:
        y = frame.y(rate)
        right = frame.width - frame.right
        parts.append(el("line", x1=frame.left, y1=y, x2=right, y2=y, class_="threshold"))
        parts.append(el("text", f"{name} {rate:.0%}", x=right + 6, y=y + 4, class_="threshold"))
    return el("g", parts, class_="thresholds")


def _series(index: int, curve: RuleDrift, frame: _Frame, count: int, depths: Sequence[int]) -> Html:
    colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
    dodge = (index - (count - 1) / 2) * min(8.0, 48 / count)  # bars of rules side by side
    points = [(frame.x(cell.after_turn) + dodge, cell) for cell in curve.cells]
    line = _line(points, frame, _joined(curve, depths))
    marks = [_point(x, cell, frame, curve, index, colour) for x, cell in points]
    return el(
        "g",
        el(
            "path",
            d=line,
            class_="drift-line",
            data_rule=curve.rule.id,
            stroke=colour,
            stroke_dasharray=_DASHES[index // len(SERIES_COLOURS) % len(_DASHES)] or None,
        ),
        marks,
        class_="series",
        data_rule=curve.rule.id,
    )


def _joined(curve: RuleDrift, depths: Sequence[int]) -> list[bool]:
    """For each cell after the first: whether the line reaches it from the one before, which it
    does only when no depth of the chart lies between them (a depth the rule was not probed at,
    or where every run errored, has no point: the line breaks there instead of drawing a rate
    nobody measured)."""
    column = {depth: position for position, depth in enumerate(depths)}
    turns = [cell.after_turn for cell in curve.cells]
    return [column[b] == column[a] + 1 for a, b in itertools.pairwise(turns)]


def _line(points: list[tuple[float, DriftCell]], frame: _Frame, joined: list[bool]) -> str:
    """The path through the measured points: `L` to a point joined to the one before, `M` (a
    new stretch) after a gap."""
    moves = ["M", *("L" if step else "M" for step in joined)]
    return " ".join(
        f"{move}{x:.1f},{frame.y(cell.rate.rate):.1f}"
        for move, (x, cell) in zip(moves, points, strict=True)
    )


def _point(
    x: float, cell: DriftCell, frame: _Frame, curve: RuleDrift, index: int, colour: str
) -> Html:
    rate = cell.rate
    tip = f"{curve.rule.id}, after turn {cell.after_turn}: {cell_rate(cell)} · {cell.status}"
    low, high = frame.y(rate.low), frame.y(rate.high)
    fill = colour if cell.status == "passed" else "#ffffff"
    bars = [
        el("line", x1=x, y1=low, x2=x, y2=high, stroke=colour, class_="interval"),
        el("line", x1=x - 4, y1=low, x2=x + 4, y2=low, stroke=colour, class_="interval"),
        el("line", x1=x - 4, y1=high, x2=x + 4, y2=high, stroke=colour, class_="interval"),
    ]
    return el(
        "g",
        el("title", tip),
        None if cell.identical else bars,
        marker(_MARKERS[index % len(_MARKERS)], x, frame.y(rate.rate), colour, fill),
        class_=f"point {cell.status}",
        data_after_turn=cell.after_turn,
    )


def marker(shape: str, x: float, y: float, colour: str, fill: str, size: float = 5) -> Html:
    """A marker of one of `_MARKERS` centred on (x, y) (never a `<path>`: the chart has one
    path per rule, and tests count them)."""
    style = {"stroke": colour, "fill": fill, "class_": "marker"}
    if shape == "circle":
        return el("circle", cx=x, cy=y, r=size, **style)
    if shape == "square":
        side = size * 1.7
        return el("rect", x=x - side / 2, y=y - side / 2, width=side, height=side, **style)
    corners = {
        "triangle": [(0, -1.25), (1.15, 0.9), (-1.15, 0.9)],
        "diamond": [(0, -1.35), (1.2, 0), (0, 1.35), (-1.2, 0)],
        "down": [(0, 1.25), (1.15, -0.9), (-1.15, -0.9)],
    }[shape]
    points = " ".join(f"{x + dx * size:.1f},{y + dy * size:.1f}" for dx, dy in corners)
    return el("polygon", points=points, **style)


def _legend(curves: Sequence[RuleDrift], stories: Sequence[RuleStory]) -> Html:
    lines = {story.rule.id: story for story in stories}
    items = []
    for index, curve in enumerate(curves):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        dash = _DASHES[index // len(SERIES_COLOURS) % len(_DASHES)] or None
        swatch = el(
            "svg",
            el(
                "line",
                x1=2,
                y1=8,
                x2=34,
                y2=8,
                stroke=colour,
                stroke_dasharray=dash,
                class_="swatch-line",
            ),
            marker(_MARKERS[index % len(_MARKERS)], 18, 8, colour, colour, 4.5),
            width=36,
            height=16,
            viewBox="0 0 36 16",
            aria_hidden="true",
        )
        story = lines.get(curve.rule.id)
        items.append(
            el(
                "li",
                swatch,
                el("strong", curve.rule.id),
                el("span", f" {curve.rule.severity}", class_="muted"),
                el("span", f" · {story.line}", class_="muted") if story else None,
                data_rule=curve.rule.id,
            )
        )
    return el("ul", items, class_="legend")


def variants_section(result: RunResult) -> Html | None:
    """With `--variants`: the variants' drift curves on one chart, then each probe under each
    variant against base, worded as every report words it (`sentences`)."""
    reading = read_variants(result)
    curves = variant_curves(result)
    if reading is None or not curves:
        return None
    rows = [
        el(
            "tr",
            el("td", el("code", f"{row.scenario}/{row.probe.probe.id}")),
            el("td", row.variant.id),
            el("td", variant_words(row)),
            class_=row.comparison.label.replace(" ", "-") if row.comparison else "shared",
        )
        for row in reading.probes
    ]
    header = el(
        "tr",
        el("th", "probe", scope="col"),
        el("th", "variant", scope="col"),
        el("th", "against base", scope="col"),
    )
    plan = el("p", pairing_words(reading.plan), class_="muted") if reading.plan else None
    return el(
        "section",
        el("h2", "Variants"),
        el("p", variants_heading(reading), class_="muted"),
        drift_chart(curves, result, "variants-chart"),
        _legend(curves, ()),
        el(
            "div",
            el(
                "table",
                el("thead", header),
                el("tbody", rows),
                class_="variants",
            ),
            class_="scroll",
        ),
        plan,
        id="variants",
    )
