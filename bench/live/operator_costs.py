"""The operator process's CPU seconds and peak RSS (Linux /proc), and its disruption commands (its log)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return round(ticks / os.sysconf("SC_CLK_TCK"), 2)


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def commands(log: Path, start: float, end: float) -> list[dict[str, Any]]:
    """Disruption commands the operator started in [start, end): its log lines that carry a decision."""
    from bench.live.observe import epoch

    found = []
    for line in log.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        if "decision" in entry and "command" in entry and start <= epoch(entry["time"]) < end:
            found.append({"seconds": round(epoch(entry["time"]) - start, 1), "message": entry["message"]})
    return found
