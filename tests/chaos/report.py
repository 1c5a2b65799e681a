"""Each chaos scenario writes its row of ``tests/chaos/REPORT.md``: the invariant, the figure measured,
pass or fail. A row is replaced when the scenario runs again, so the file holds the last result of each;
the text above the table is left as it is."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

REPORT = Path(__file__).with_name("REPORT.md")
INTRO = """# Chaos report

What Cluster API does underneath kapstan, on the sandbox (`make chaos`): each scenario checks an invariant in
code and writes its row here when it runs (`tests/chaos/report.py`). Times are wall-clock seconds on the
shared 2-core machine.

"""
TABLE = "| Scenario | Invariant | Measured | Result | Run |\n|---|---|---|---|---|\n"


def record(scenario: str, invariant: str, measured: str, passed: bool) -> None:
    """Write (or replace) ``scenario``'s row. ``KAPSTAN_CHAOS_REPORT=0`` leaves the file alone."""
    if os.environ.get("KAPSTAN_CHAOS_REPORT") == "0":
        return
    rows = _rows()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows[scenario] = f"| {scenario} | {invariant} | {measured} | {'pass' if passed else 'FAIL'} | {when} |"
    REPORT.write_text(_intro() + TABLE + "".join(f"{row}\n" for row in rows.values()))


def _intro() -> str:
    """The text above the table, kept as it was written (notes of earlier runs live there)."""
    if not REPORT.exists():
        return INTRO
    text = REPORT.read_text()
    return text[: text.index(TABLE)] if TABLE in text else INTRO


def _rows() -> dict[str, str]:
    if not REPORT.exists():
        return {}
    rows: dict[str, str] = {}
    for line in REPORT.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("Scenario", "---") and not cells[0].startswith("---"):
            rows[cells[0]] = line
    return rows
