"""``kapstan report --html`` as a person sees it: headless Chromium renders the page of a fixture report and
the screenshot shows every bar where the page's SVG puts it, with the SVG's height, in the SVG's colour,
and no bar where the price is 0. An XML check of the page (test_report.py) cannot see a chart that a
browser draws wrong or not at all (an SVG outside the viewport, a bar the CSS hides, a bad viewBox).

Skipped, saying how to install one, when no Chromium is on PATH: ``make browser`` installs Debian's
``chromium-headless-shell`` (about 64 MB), which is enough.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from kapstan.whatif.html import NOW_COLOUR, PLANNED_COLOUR, render_html
from kapstan.whatif.report import Report, Row

SVG = "{http://www.w3.org/2000/svg}"
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
INSTALL = "make browser (apt-get install --no-install-recommends chromium-headless-shell)"
WINDOW = (1000, 800)
# Bar tops sit at fractional pixels (heights are prices scaled), so the top row may be blended.
TOLERANCE = 1.5


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle in pixels: left, top, width, height."""

    x: float
    y: float
    width: float
    height: float


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no headless Chromium on PATH ({', '.join(BROWSERS)}): `{INSTALL}` to run this check")


def _screenshot(page: Path, out: Path) -> Image.Image:
    command = [
        _browser(),
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--user-data-dir={out.parent / 'profile'}",
        f"--screenshot={out}",
        page.as_uri(),
    ]
    if os.geteuid() == 0:
        command.insert(1, "--no-sandbox")  # Chromium refuses to start its sandbox as root
    # A second or so on a quiet machine; generous for a loaded one.
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    return Image.open(out).convert("RGB")


def _rgb(colour: str) -> tuple[int, int, int]:
    value = int(colour.lstrip("#"), 16)
    return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF


def _painted(image: Image.Image, colour: str) -> list[Box]:
    """Bounding boxes of the connected areas painted exactly ``colour``, left to right."""
    wanted = _rgb(colour)
    width, height = image.size
    pixels = image.load()
    assert pixels is not None
    todo = {(x, y) for y in range(height) for x in range(width) if pixels[x, y] == wanted}
    boxes = []
    while todo:
        queue = deque([todo.pop()])
        xs, ys = [], []
        while queue:
            x, y = queue.popleft()
            xs.append(x)
            ys.append(y)
            for near in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if near in todo:
                    todo.remove(near)
                    queue.append(near)
        boxes.append(Box(min(xs), min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1))
    return sorted(boxes, key=lambda b: (b.x, b.y))


def _drawn(page: str, colour: str) -> list[Box]:
    """The SVG's rectangles of ``colour`` that have an area (bars and the legend's key), left to right."""
    root = ET.fromstring(page.split("\n", 1)[1])
    boxes = [
        Box(*(float(rect.get(k, "0")) for k in ("x", "y", "width", "height")))
        for rect in root.iter(f"{SVG}rect")
        if rect.get("fill") == colour
    ]
    return sorted((b for b in boxes if b.width > 0 and b.height > 0), key=lambda b: (b.x, b.y))


def _close(seen: Box, drawn: Box, origin: tuple[float, float]) -> bool:
    ox, oy = origin
    return (
        abs(seen.x - (drawn.x + ox)) <= TOLERANCE
        and abs(seen.y - (drawn.y + oy)) <= TOLERANCE
        and abs(seen.width - drawn.width) <= TOLERANCE
        and abs(seen.height - drawn.height) <= TOLERANCE
    )


def test_a_browser_draws_every_bar_where_the_svg_puts_it(tmp_path: Path) -> None:
    # Three flavors, four distinct non-zero prices per side, and a price of 0 on each side.
    report = Report(
        rows=[
            Row("-", "c3-16", nodes_now=1, price_now=12.0),
            Row("default", "c3-4", nodes_planned=1, price_planned=3.0),
            Row("default", "c3-8", nodes_now=1, price_now=6.0, nodes_planned=1, price_planned=6.0),
        ]
    )
    page = render_html(report, "kapstan report: Cluster capi/kapstan")
    (tmp_path / "report.html").write_text(page)
    image = _screenshot(tmp_path / "report.html", tmp_path / "report.png")
    assert image.size == WINDOW

    now_drawn, now_seen = _drawn(page, NOW_COLOUR), _painted(image, NOW_COLOUR)
    planned_drawn, planned_seen = _drawn(page, PLANNED_COLOUR), _painted(image, PLANNED_COLOUR)
    # Bars of now (c3-16, c3-8, total) and of kapstan (c3-4, c3-8, total), each with its legend key.
    assert (len(now_drawn), len(planned_drawn)) == (4, 4)
    assert len(now_seen) == len(now_drawn), f"{now_seen} on screen, {now_drawn} in the SVG"
    assert len(planned_seen) == len(planned_drawn), f"{planned_seen} on screen, {planned_drawn} in the SVG"
    # Where the page put the SVG: the first bar's offset, which every other box must share.
    origin = (now_seen[0].x - now_drawn[0].x, now_seen[0].y - now_drawn[0].y)
    for seen, drawn in [
        *zip(now_seen, now_drawn, strict=True),
        *zip(planned_seen, planned_drawn, strict=True),
    ]:
        assert _close(seen, drawn, origin), f"{seen} on screen where the SVG draws {drawn} at {origin}"
    # On screen as priced: the tallest bar is the total now (18/h), twice the total planned (9/h).
    tallest = max(now_seen + planned_seen, key=lambda b: b.height)
    assert tallest == max(now_seen, key=lambda b: b.height)
    total_planned = max(planned_seen, key=lambda b: b.height)
    assert abs(tallest.height / total_planned.height - 2.0) < 0.02
