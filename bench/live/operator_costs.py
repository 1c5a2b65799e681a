"""The operator process's CPU seconds and peak RSS (Linux /proc), and from its log the provisioner's batches
and the disruption commands."""

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
    return [
        {"seconds": seconds, "message": entry["message"]}
        for seconds, entry in _entries(log, start, end)
        if "decision" in entry and "command" in entry
    ]


def batches(log: Path, start: float, end: float) -> list[dict[str, Any]]:
    """The provisioner's batches in [start, end): when each was solved, the pods it planned (those not on
    an in-flight claim already), the claims it opened and their flavors. A batch is its ``solved`` line
    and the ``created nodeclaim`` lines after it."""
    found: list[dict[str, Any]] = []
    for seconds, entry in _entries(log, start, end):
        if entry["message"] == "solved":
            found.append({"seconds": seconds, "pods": entry["pods"], "nodeClaims": entry["nodeclaims"]})
            found[-1]["flavors"] = {}
        elif entry["message"] == "created nodeclaim" and found:
            flavors = found[-1]["flavors"]
            flavors[entry["instanceType"]] = flavors.get(entry["instanceType"], 0) + 1
    return found


def _entries(log: Path, start: float, end: float) -> list[tuple[float, dict[str, Any]]]:
    """The JSON log lines written in [start, end), each with its seconds since ``start``."""
    from bench.live.observe import epoch

    found = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if "time" in entry and start <= epoch(entry["time"]) < end:
                found.append((round(epoch(entry["time"]) - start, 1), entry))
    return found
