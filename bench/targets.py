"""Every threshold the benchmark checks, in one place.

A target names an engine, the workloads it applies to, a metric and a limit. `check` turns results into
PASS / MISS with the margin, or NOT RUN when the engine or workload was not measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Metric = Literal["median_seconds", "cost_ratio"]

FIRST_SOLVE_CAP_SECONDS = 60.0
"""A first solve still running after this long is stopped and the run reported as skipped."""
TIME_BUDGET_SECONDS = 30.0
"""Repetitions per (workload, engine) are cut to fit this budget after the first run."""
INTEGER_BOUND_SECONDS = 10.0
"""Time limit for the integer version of the bound."""


@dataclass(frozen=True)
class Target:
    engine: str
    workload: str
    metric: Metric
    limit: float
    why: str


TARGETS: tuple[Target, ...] = (
    Target("rust", "mix-20000", "median_seconds", 1.0, "20,000 mixed pods x 400 flavors under 1 s"),
    Target("rust", "mix-5000", "median_seconds", 0.25, "5,000 mixed pods x 400 flavors under 0.25 s"),
    Target("python", "mix-1000", "median_seconds", 5.0, "the pure-Python twin stays usable at 1,000 pods"),
    *(
        Target("rust", w, "cost_ratio", 1.05, "cost within 5% of the lower bound")
        for w in ("generic-1000", "generic-5000", "generic-20000", "capi-200", "capi-1000", "capi-5000")
    ),
    Target(
        "rust",
        "spread-1000",
        "cost_ratio",
        1.05,
        "zone-spread Deployments, a pricey large flavor: cost within 5% of the lower bound",
    ),
)


@dataclass(frozen=True)
class Verdict:
    target: Target
    status: Literal["PASS", "MISS", "NOT RUN"]
    value: float | None
    detail: str


def _format(metric: Metric, value: float) -> str:
    return f"{value:.3f} s" if metric == "median_seconds" else f"{value:.3f}x bound"


def check(results: Sequence[Mapping[str, object]], engines: Sequence[str]) -> list[Verdict]:
    by_key = {(r["engine"], r["workload"]): r for r in results}
    out = []
    for t in TARGETS:
        result = by_key.get((t.engine, t.workload))
        value = result.get(t.metric) if result else None
        if not isinstance(value, int | float):
            if t.engine not in engines:
                reason = f"engine {t.engine!r} is not in kapstan.scheduling.ENGINES (or not selected)"
            elif result is None:
                reason = "workload not in this run (--quick or --only)"
            elif t.metric == "median_seconds" and isinstance(stopped := result.get("stopped_after"), float):
                detail = f"> {stopped:.0f} s (stopped) vs {_format(t.metric, t.limit)}"
                out.append(Verdict(t, "MISS", None, detail))
                continue
            else:
                reason = str(result.get("skipped") or "no value")
            out.append(Verdict(t, "NOT RUN", None, reason))
            continue
        margin = (value - t.limit) / t.limit
        limit = _format(t.metric, t.limit)
        if value <= t.limit and (t.metric != "median_seconds" or value < t.limit):
            out.append(
                Verdict(t, "PASS", value, f"{_format(t.metric, value)} vs {limit} ({-margin:.1%} under)")
            )
        else:
            over = f"{value / t.limit:.1f}x the limit" if value >= 2 * t.limit else f"{margin:.1%} over"
            out.append(Verdict(t, "MISS", value, f"{_format(t.metric, value)} vs {limit} ({over})"))
    return out
