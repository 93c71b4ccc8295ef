"""Line charts drawn as inline SVG on the server: no script, no chart library, nothing for the CSP to allow.

Readable with 3 points and with 30,000: y ticks at round steps with the unit, time ticks at round minutes or hours
(UTC), a dot on each point while there are few, and long series thinned to each pixel column's lowest and highest
value (a spike stays visible). An all-zero series is drawn on the zero line under an axis that shows 0 alone (no
invented maximum); a chart with nothing to draw says what will appear there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup, escape

__all__ = ("Line", "line_chart", "nice_step", "time_ticks", "y_ticks")

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 60, 12, 26, 30
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
# Colour-blind-safe pairs (Okabe-Ito): a chart has at most a few lines.
COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7")
MAX_Y_TICKS = 5
MAX_TIME_TICKS = 7
DOTS_UP_TO = 60  # points a line may have and still get a dot on each
TIME_STEPS_S = tuple(minutes * 60 for minutes in (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080))


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    values: Sequence[float | None]  # one per x; None leaves a gap


def nice_step(top: float, ticks: int = MAX_Y_TICKS) -> float:
    """The smallest of 1, 2, 2.5 and 5 times a power of ten that covers 0..``top`` in at most ``ticks`` steps."""
    raw = top / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)


def y_ticks(highest: float) -> list[float]:
    """Tick values from 0 to a round top at or above ``highest``; [0] alone when nothing is above zero."""
    if highest <= 0:
        return [0.0]
    step = nice_step(highest)
    count = math.ceil(highest / step - 1e-9)
    return [step * index for index in range(count + 1)]


def time_ticks(first: float, last: float) -> list[float]:
    """Round times (whole minutes or hours, UTC) between ``first`` and ``last``, at most ``MAX_TIME_TICKS``."""
    span = max(last - first, 60.0)
    step = next((s for s in TIME_STEPS_S if span / s <= MAX_TIME_TICKS - 1), TIME_STEPS_S[-1])
    tick = math.ceil(first / step) * step
    ticks = []
    while tick <= last:
        ticks.append(float(tick))
        tick += step
    return ticks


def _number(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10 or value == int(value):
        return f"{value:.0f}" if value == int(value) else f"{value:.1f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _stamp(moment: float, span: float) -> str:
    when = datetime.fromtimestamp(moment, UTC)
    return when.strftime("%m-%d %H:%M") if span > 86_400 else when.strftime("%H:%M")


def _runs(xs: Sequence[float], values: Sequence[float | None]) -> list[list[tuple[float, float]]]:
    """Consecutive non-None points, each run drawn as one polyline (a single point as a dot)."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, value in zip(xs, values, strict=True):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((x, value))
    return [run for run in runs if run]


def _thinned(run: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A run of more points than pixel columns, as each column's lowest and highest point, in order."""
    if len(run) <= 2 * PLOT_W:
        return run
    columns: dict[int, list[tuple[float, float]]] = {}
    for point in run:
        columns.setdefault(int(point[0] - LEFT), []).append(point)
    kept: list[tuple[float, float]] = []
    for column in columns.values():
        low, high = min(column, key=lambda p: p[1]), max(column, key=lambda p: p[1])
        kept.extend(sorted({low, high}))
    return kept


def _axes(title: str, unit: str, ticks: list[float], times: Sequence[float], scale: float) -> list[str]:
    base = TOP + PLOT_H
    unit_text = f" ({unit})" if unit else ""
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title + unit_text)}" '
        f'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title + unit_text)}</title>",
        f'<text class="title" x="{LEFT}" y="14" font-size="12" font-weight="bold">{escape(title)}'
        f'<tspan class="unit" font-weight="normal" fill="#555">{escape(unit_text)}</tspan></text>',
        f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#888"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#888"/>',
    ]
    for value in ticks:
        y = base - value * scale
        if value:
            parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                         f'stroke="#e6e6e6"/>')
        parts.append(f'<text class="ytick" x="{LEFT - 5}" y="{y + 3.5:.1f}" text-anchor="end" font-size="10">'
                     f"{escape(_number(value))}</text>")
    if times:
        first, last = times[0], times[-1]
        span = max(last - first, 1.0)
        for tick in time_ticks(first, last):
            x = LEFT + (tick - first) / span * PLOT_W if last > first else LEFT + PLOT_W / 2
            parts.append(f'<line class="xtick" x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" stroke="#888"/>')
            parts.append(f'<text class="xtick" x="{x:.1f}" y="{base + 15}" text-anchor="middle" font-size="10">'
                         f"{_stamp(tick, span)}</text>")
        parts.append(f'<text class="xunit" x="{WIDTH - RIGHT}" y="{HEIGHT - 2}" text-anchor="end" font-size="9" '
                     'fill="#555">time (UTC)</text>')
    return parts


def line_chart(title: str, unit: str, times: Sequence[float], lines: Sequence[Line],
               empty: str = "no data in this window yet") -> Markup:
    """An SVG of ``lines`` over ``times`` (unix seconds); y from 0 to a round value at or above the highest. Text
    is escaped; ``empty`` says what will appear when there is nothing to draw."""
    values = [v for line in lines for v in line.values if v is not None]
    ticks = y_ticks(max(values, default=0.0))
    scale = PLOT_H / ticks[-1] if ticks[-1] > 0 else 0.0  # all zero: drawn on the zero line
    span = (times[-1] - times[0]) if len(times) > 1 else 0.0
    xs = [LEFT + (t - times[0]) / span * PLOT_W if span else LEFT + PLOT_W / 2 for t in times]
    parts = _axes(title, unit, ticks, times, scale)
    base = TOP + PLOT_H
    for index, line in enumerate(lines):
        colour = COLOURS[index % len(COLOURS)]
        runs = _runs(xs, line.values)
        dotted = sum(len(run) for run in runs) <= DOTS_UP_TO
        for run in runs:
            if len(run) > 1:
                points = " ".join(f"{x:.1f},{base - value * scale:.1f}" for x, value in _thinned(run))
                parts.append(f'<polyline class="series" points="{points}" fill="none" stroke="{colour}" '
                             f'stroke-width="1.5"/>')
            if dotted or len(run) == 1:
                parts.extend(f'<circle class="point" cx="{x:.1f}" cy="{base - value * scale:.1f}" r="2.5" '
                             f'fill="{colour}"/>' for x, value in run)
        latest = next((value for value in reversed(line.values) if value is not None), None)
        shown = "" if latest is None else f" latest {_number(latest)}"  # a lone point's value, readable
        parts.append(f'<text class="legend" x="{WIDTH - RIGHT - 130 * (len(lines) - index - 1)}" y="14" '
                     f'text-anchor="end" font-size="10" fill="{colour}">■ {escape(line.label)}{shown}</text>')
    if not values:
        parts.append(f'<text class="empty" x="{LEFT + PLOT_W / 2}" y="{TOP + PLOT_H / 2}" text-anchor="middle" '
                     f'font-size="12" fill="#666">{escape(empty)}</text>')
    elif ticks == [0.0]:
        parts.append(f'<text class="all-zero" x="{LEFT + 6}" y="{base - 6}" font-size="10" fill="#666">'
                     f"all 0 in this window</text>")
    parts.append("</svg>")
    return Markup("".join(parts))
