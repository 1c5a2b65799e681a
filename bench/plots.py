"""The two PNGs of the report: solve time against pod count, and cost over the lower bound."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bench.targets import TARGETS

KARPENTER_REFERENCE = ((5000, 4.0), (20000, 20.0))
"""Karpenter's core scheduler as quoted in docs/architecture.md#why-it-exists (not measured here)."""


def solve_time(results: Sequence[Mapping[str, Any]], engines: Sequence[str], path: Path) -> None:
    fig = Figure(figsize=(7.5, 5))
    ax = fig.subplots()
    colors = {e: f"C{i}" for i, e in enumerate(engines)}
    for engine in engines:
        for family, style in (("mix", "-o"), ("generic", ":s")):
            mine = [r for r in results if r["engine"] == engine and r["family"] == family]
            points = sorted((r["pods"], r["median_seconds"]) for r in mine if r.get("median_seconds"))
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, style, color=colors[engine], label=f"{engine}, {family}")
            for r in mine:
                if r.get("stopped_after"):
                    ax.plot([r["pods"]], [r["stopped_after"]], "^", color=colors[engine], fillstyle="none")
                    ax.annotate(
                        f"{engine} stopped, > {r['stopped_after']:.0f} s",
                        (r["pods"], r["stopped_after"]),
                        textcoords="offset points",
                        xytext=(-120, 6),
                        fontsize=7,
                    )
    xs, ys = zip(*KARPENTER_REFERENCE, strict=True)
    ax.plot(xs, ys, "--", color="grey", label="Karpenter, mix (quoted, not measured)")
    for t in TARGETS:
        if t.metric == "median_seconds" and t.workload.startswith("mix-"):
            x = int(t.workload.split("-")[1])
            ax.plot([x], [t.limit], "_", color=colors.get(t.engine, "red"), markersize=18, markeredgewidth=2)
            ax.annotate(
                f"{t.engine} target", (x, t.limit), textcoords="offset points", xytext=(8, -3), fontsize=7
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("pending pods (400 flavors)")
    ax.set_ylabel("median solve time (s)")
    ax.set_title("Solve time: Karpenter's benchmark mix (solid) and generic pods (dotted)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def cost_ratio_bars(ax: Axes, results: Sequence[Mapping[str, Any]], systems: Sequence[str]) -> None:
    """One bar per workload and system side by side, the plan's cost over the workload's lower bound, on a y
    axis from 0.9 to above the largest ratio; the caller adds its target line, title and legend."""
    names = list(dict.fromkeys(r["workload"] for r in results if r.get("cost_ratio")))
    width = 0.8 / max(len(systems), 1)
    for i, system in enumerate(systems):
        ratios = {
            r["workload"]: r["cost_ratio"] for r in results if r["engine"] == system and r.get("cost_ratio")
        }
        xs = [j + i * width for j, name in enumerate(names) if name in ratios]
        ax.bar(xs, [ratios[n] for n in names if n in ratios], width, label=system, color=f"C{i}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + width * (len(systems) - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("plan cost / lower bound")
    ax.set_ylim(0.9, max([1.2, *(r["cost_ratio"] for r in results if r.get("cost_ratio"))]) * 1.05)


def cost_vs_bound(results: Sequence[Mapping[str, Any]], engines: Sequence[str], path: Path) -> None:
    names = {r["workload"] for r in results if r.get("cost_ratio")}
    fig = Figure(figsize=(max(7, 0.7 * len(names)), 4.5))
    ax = fig.subplots()
    cost_ratio_bars(ax, results, engines)
    ax.axhline(1.05, color="red", linestyle="--", linewidth=0.8, label="target 1.05 (generic, capi)")
    ax.set_title("Cost over the LP / integer lower bound")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
