"""The Performance charts read with 3 points and with 30,000: round ticks with units, time ticks in UTC, a dot on
each of a few points, long series thinned to the pixel columns with their peaks, no invented maximum for an
all-zero series, and an empty chart that says what will appear."""

from __future__ import annotations

import re

from cogs.memory.dashboard.charts import PLOT_W, Line, line_chart, nice_step, time_ticks, y_ticks

T0 = 1_714_564_800.0  # 2024-05-01 12:00 UTC


def texts(svg: str, css_class: str) -> list[str]:
    return re.findall(rf'<text class="{css_class}"[^>]*>([^<]*)</text>', svg)


def test_y_ticks_are_round_and_cover_the_highest_value() -> None:
    assert y_ticks(37.0) == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert [round(tick, 6) for tick in y_ticks(0.8)] == [0.0, 0.2, 0.4, 0.6, 0.8]
    assert y_ticks(0.0) == [0.0] and nice_step(1234.0) == 250.0


def test_time_ticks_fall_on_round_minutes_and_hours() -> None:
    assert time_ticks(T0 + 30, T0 + 3600) == [T0 + 600 * n for n in range(1, 7)]
    day = time_ticks(T0, T0 + 86_400)
    assert len(day) <= 7 and all(tick % 21_600 == 0 for tick in day)  # every 6 h


def test_three_points_each_get_a_dot_ticks_and_units() -> None:
    svg = str(line_chart("First-stage latency", "ms", [T0, T0 + 60, T0 + 120],
                         [Line("p50", [12.0, None, 47.5])]))
    assert svg.count('class="point"') == 2 and 'class="series"' not in svg  # a gap: two lone points
    assert texts(svg, "legend") == ["■ p50 latest 47.5"]
    assert texts(svg, "ytick") == ["0", "10", "20", "30", "40", "50"]
    assert "(ms)" in svg and texts(svg, "xtick") == ["12:00", "12:01", "12:02"] and "time (UTC)" in svg
    svg = str(line_chart("Rate", "msg/min", [T0, T0 + 60, T0 + 120], [Line("stored", [1.0, 2.0, 3.0])]))
    assert svg.count('class="point"') == 3 and svg.count('class="series"') == 1


def test_thirty_thousand_points_are_thinned_to_the_pixel_columns_and_keep_their_peak() -> None:
    times = [T0 + 60 * n for n in range(30_000)]
    values = [5.0 + (n % 7) for n in range(30_000)]
    values[12_345] = 900.0  # one spike among them
    svg = str(line_chart("Rerank latency", "ms", times, [Line("p95", values)]))
    points = re.search(r'class="series" points="([^"]+)"', svg).group(1).split()
    assert len(points) <= 2 * (PLOT_W + 1) and 'class="point"' not in svg
    assert texts(svg, "ytick")[-1] == "1,000" and len(svg) < 40_000
    assert min(float(point.split(",")[1]) for point in points) < 45  # the spike reaches near the top (y 26)
    assert 2 <= len(texts(svg, "xtick")) <= 7 and all("-" in label for label in texts(svg, "xtick"))  # dates shown


def test_an_all_zero_series_has_no_invented_maximum() -> None:
    svg = str(line_chart("Ingest backlog", "messages", [T0, T0 + 60], [Line("waiting", [0.0, 0.0])]))
    assert texts(svg, "ytick") == ["0"] and "all 0 in this window" in svg
    assert svg.count('class="series"') == 1


def test_an_empty_chart_says_what_will_appear_there() -> None:
    svg = str(line_chart("Rerank latency", "ms", [T0, T0 + 60], [Line("p50", [None, None])],
                         "appears with the first search the reranker scores"))
    assert texts(svg, "empty") == ["appears with the first search the reranker scores"]
    assert texts(svg, "ytick") == ["0"] and 'class="series"' not in svg and 'class="point"' not in svg
