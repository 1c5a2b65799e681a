"""The two PNGs of PEERS.md: solve time against pods for every timed system, cost over the bound for all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from bench.peers.report import SYSTEMS, TIMED_PEERS
from bench.plots import cost_ratio_bars


def time_vs_pods(results: Sequence[Mapping[str, Any]], path: Path) -> None:
    fig = Figure(figsize=(7.5, 5))
    ax = fig.subplots()
    for i, system in enumerate(("rust", "python", *TIMED_PEERS)):
        for family, style in (("mix", "-o"), ("generic", ":s"), ("capi", "--^")):
            points = sorted(
                (r["pods"], r["median_seconds"])
                for r in results
                if r["engine"] == system
                and r["family"] == family
                and r.get("median_seconds")
                and not r.get("skipped")
            )
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, style, color=f"C{i}", label=f"{system}, {family}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("pending pods")
    ax.set_ylabel("median solve time (s)")
    ax.set_title("Solve time, measured side by side in one run")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def cost_vs_bound(results: Sequence[Mapping[str, Any]], path: Path) -> None:
    names = {r["workload"] for r in results if r.get("cost_ratio")}
    systems = [s for s in SYSTEMS if any(r["engine"] == s and r.get("cost_ratio") for r in results)]
    fig = Figure(figsize=(max(7.0, 0.9 * len(names)), 4.8))
    ax = fig.subplots()
    cost_ratio_bars(ax, results, systems)
    ax.axhline(1.05, color="red", linestyle="--", linewidth=0.8, label="1.05 x bound")
    ax.set_title("Cost over the lower bound, every system")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
