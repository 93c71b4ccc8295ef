"""Line charts drawn as inline SVG on the server: no script, no chart library, nothing for the CSP to allow."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup, escape

__all__ = ("Line", "line_chart")

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 56, 8, 10, 22
# Colour-blind-safe pairs (Okabe-Ito): a chart has at most a few lines.
COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7")


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    values: Sequence[float | None]  # one per x; None leaves a gap


def _label(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"


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


def line_chart(title: str, unit: str, times: Sequence[float], lines: Sequence[Line]) -> Markup:
    """An SVG of ``lines`` over ``times`` (unix seconds); y from 0 to the highest value. Text is escaped."""
    values = [v for line in lines for v in line.values if v is not None]
    top = max(values, default=0.0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = (times[-1] - times[0]) if len(times) > 1 else 1.0
    xs = [LEFT + (t - times[0]) / span * plot_w for t in times]

    def y(value: float) -> float:
        return TOP + plot_h - value / top * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<text class="title" x="{WIDTH - RIGHT}" y="{TOP + 10}" text-anchor="end" font-size="12" '
        f'font-weight="bold">{escape(title)}</text>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
        f'stroke="#888"/>',
        f'<line class="grid" x1="{LEFT}" y1="{TOP}" x2="{WIDTH - RIGHT}" y2="{TOP}" stroke="#ddd"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end" font-size="10">{escape(_label(top))} '
        f"{escape(unit)}</text>",
        f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end" font-size="10">0</text>',
    ]
    if times:
        for t, anchor, edge in ((times[0], "start", LEFT), (times[-1], "end", WIDTH - RIGHT)):
            stamp = datetime.fromtimestamp(t, UTC).strftime("%H:%M")
            parts.append(f'<text x="{edge}" y="{HEIGHT - 6}" text-anchor="{anchor}" font-size="10">{stamp} UTC</text>')
    drawn = 0
    for index, line in enumerate(lines):
        colour = COLOURS[index % len(COLOURS)]
        for run in _runs(xs, line.values):
            drawn += len(run)
            if len(run) == 1:
                (x, value), = run
                parts.append(f'<circle class="point" cx="{x:.1f}" cy="{y(value):.1f}" r="2" fill="{colour}"/>')
            else:
                points = " ".join(f"{x:.1f},{y(value):.1f}" for x, value in run)
                parts.append(f'<polyline class="series" points="{points}" fill="none" stroke="{colour}" '
                             f'stroke-width="1.5"/>')
        parts.append(f'<text x="{LEFT + 8 + 150 * index}" y="{TOP + 10}" font-size="10" fill="{colour}">'
                     f"{escape(line.label)}</text>")
    if not drawn:
        parts.append(f'<text class="empty" x="{LEFT + plot_w / 2}" y="{TOP + plot_h / 2}" text-anchor="middle" '
                     f'font-size="12" fill="#888">no data in this window yet</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
