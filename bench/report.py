"""Writes `bench/REPORT.md` from the results: a reading guide, the targets, one table per workload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.targets import Verdict
from kapstan.bench.workloads import Workload

FAMILIES = {
    "article": "The article's two experiments on c3-4 / c3-8 / c3-16 (zone `nova`), priced vCPU + GiB/4, with a "
    "100m / 128Mi node agent DaemonSet: eight 1-CPU pods, then one 3-CPU pod.",
    "mix": "Karpenter's scheduling benchmark mix against its fake 400-flavor catalog (flavor i: i+1 vCPU, "
    "2(i+1) GiB, 10(i+1) pods, 0.1/vCPU + 0.1/GiB, three zones; 100m / 10Mi per-node overhead as a "
    "DaemonSet). Fifths: generic; zone spread and hostname spread (maxSkew 1, DoNotSchedule, each pod in "
    "one of 7 self-selecting groups); zone self-affinity (7 groups); hostname anti-affinity (one shared "
    "label, so at least pods/5 nodes). CPU from {100, 250, 500, 1000, 1500}m, memory from {100 .. 4096}Mi.",
    "generic": "The mix's pod sizes and catalog with no constraints at all: pure bin packing.",
    "prefs": "4,000 pods in deployments of 40, each pod preferring one zone (weight 50), preferring no pod of "
    "its deployment in its zone (weight 30, unmeetable past three pods) and on its node (weight 10); "
    "Karpenter's catalog. The engines try preferences as hard constraints and relax them.",
    "capi": "An OVH-like CAPI catalog (16 flavors: b3 general purpose, c3 CPU-optimised, r3 memory-optimised, "
    "l4-90 with one `nvidia.com/gpu`, tainted; EUR/h list-like prices; three zones), CNI + exporter "
    "DaemonSets everywhere and a device plugin on GPU nodes; 55% small, 25% medium, 10% memory-heavy, "
    "7% CPU-heavy, 3% large (12-14 CPU, 48-96 GiB) pods and about 1% GPU pods.",
    "spread": "Deployments of 6 to 50 replicas of one size each (100m/128Mi to 2 CPU/4Gi), each spread over "
    "three zones by its own label (maxSkew 1, DoNotSchedule), on the OVH-like b3 flavors up to 16 vCPU "
    "and one metal-96 (48 vCPU, 192 GB) priced 2.5x per vCPU, which claims that grow past 16 vCPU turn "
    "into; the CAPI catalog's DaemonSets. The bound ignores zones.",
}


def _num(value: Any, fmt: str, missing: str = "-") -> str:
    return missing if value is None else format(value, fmt)


def _guide(machine: Mapping[str, Any], engines: Sequence[str], workloads: Sequence[Workload]) -> list[str]:
    families = sorted({w.family for w in workloads}, key=list(FAMILIES).index)
    lines = ["## Reading guide", ""]
    lines += [f"- **{f}**: {FAMILIES[f]}" for f in families]
    lines += [
        "",
        "Columns: *nodes* new NodeClaims; *unsched* pods left unschedulable; *$/h* the plan's hourly price; "
        "*cost/bound* that price over the best lower bound of `kapstan/bench/bounds.py` (1.00 is provably optimal; "
        "the bound ignores zones, preferences and how pods pack into nodes, so constrained workloads keep "
        "a gap no solver can close); *cpu/mem used* the share of the new nodes' allocatable that pods "
        "request; *median s* wall time of `solve()` (median of *runs*); *valid* the plan passed "
        "`kapstan.scheduling.validator.validate`.",
        "",
        "*reference* rows are not an engine: `bench/reference.py` is a deliberately naive packer (pods in "
        "shuffled order, first fit, each node shrunk to its cheapest fitting flavor at the end) run only on "
        "workloads without hard topology rules. Its plan goes through the same validator. It shows how "
        "close to the bound a valid plan can get, so a gap it closes is the engines' to close too.",
        "",
        f"Machine: {machine['cores']} cores (`os.cpu_count()`), {machine['platform']}, Python "
        f"{machine['python']}. It is a **shared, noisy 2-core machine** (Go builds and other sessions run "
        "beside the benchmark): read times as an order of magnitude, not to the millisecond.",
        "",
        f"Engines measured: {', '.join(f'`{e}`' for e in engines)} (every entry of "
        "`kapstan.scheduling.ENGINES`). Compiled core `kapstan._core.build_info()`: "
        f"`{machine['build_info']}`, {machine.get('core', 'unknown file')}.",
    ]
    if machine.get("dirty"):
        lines += [
            "",
            f"Engine sources had uncommitted changes: {', '.join(f'`{p}`' for p in machine['dirty'])}.",
        ]
    if machine.get("kept_rows"):
        lines += [
            "",
            f"Merged run (`--merge`): {machine['kept_rows']} rows kept from the run of {machine['merged_from']}, "
            "the rest measured now.",
        ]
    if machine.get("core_changed"):
        lines += [
            "",
            "**The compiled core was rebuilt while this ran**: compiled-engine rows may come from two builds.",
        ]
    if "rust" not in engines:
        lines += [
            "",
            "**The Rust engine is not registered in `kapstan.scheduling.ENGINES` yet**: only the pure-Python "
            "engine was measured, and every Rust target below reads NOT RUN.",
        ]
    return [*lines, ""]


def _targets(verdicts: Sequence[Verdict]) -> list[str]:
    lines = ["## Targets", "", "| status | engine | workload | target | measured |", "|---|---|---|---|---|"]
    for v in verdicts:
        t = v.target
        lines.append(f"| **{v.status}** | {t.engine} | {t.workload} | {t.why} | {v.detail} |")
    return [*lines, ""]


def _table(workload: Workload, bound: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    integer = "" if bound["integer"] is None else f", integer {bound['integer']:.2f}"
    optimal = " (proven)" if bound["integer_optimal"] else " (dual bound at time limit)"
    lines = [
        f"### {workload.name}",
        "",
        f"{workload.pods:,} pod{'s' if workload.pods != 1 else ''}, {workload.description}. Bound: LP "
        f"{_num(bound['lp'], '.2f')}{integer}{optimal if integer else ''}"
        + (f"; at least {bound['min_nodes']} nodes." if bound["min_nodes"] else "."),
        "",
        "| engine | nodes | unsched | $/h | cost/bound | cpu used | mem used | median s | runs | valid |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("skipped"):
            lines.append(f"| {r['engine']} | skipped: {r['skipped']} |||||||||")
            continue
        valid = "yes" if r["valid"] else f"**no** ({r['violation_count']}: {r['violations'][0]})"
        lines.append(
            f"| {r['engine']} | {r['nodes']} | {r['unschedulable']} | {r['price_per_hour']:.2f} | "
            f"{_num(r['cost_ratio'], '.3f')} | {_num(r['cpu_used'], '.0%')} | {_num(r['memory_used'], '.0%')} | "
            f"{r['median_seconds']:.3f} | {len(r['seconds'])} | {valid} |"
        )
    return [*lines, ""]


def _flags(results: Sequence[Mapping[str, Any]], engines: Sequence[str]) -> list[str]:
    """Things worth a look, found mechanically; engines with the same finding share one line."""
    found: dict[str, list[str]] = {}
    done = [r for r in results if not r.get("skipped")]
    by_key = {(r["workload"], r["engine"]): r for r in done}
    for r in done:
        if r["engine"] == "reference":
            continue
        where = f"on {r['workload']}"
        used = f"cpu {r['cpu_used']:.0%} / mem {r['memory_used']:.0%} of new capacity used"
        if not r["valid"]:
            found.setdefault(f"{where}: **invalid plan**, e.g. `{r['violations'][0]}`", []).append(
                r["engine"]
            )
        if r["unschedulable"]:
            found.setdefault(f"{where}: {r['unschedulable']} pods left unschedulable", []).append(r["engine"])
        ref = by_key.get((r["workload"], "reference"))
        if ref and r["cost_ratio"] and ref["cost_ratio"] and r["cost_ratio"] > ref["cost_ratio"] * 1.02:
            text = (
                f"{where}: costs {r['price_per_hour'] / ref['price_per_hour'] - 1:.1%} more than the naive "
                f"reference ({r['cost_ratio']:.3f} vs {ref['cost_ratio']:.3f} of the bound; {used})"
                + (f"; {ref['note']}" if ref.get("note") else "")
            )
            found.setdefault(text, []).append(r["engine"])
        elif not ref and r["cost_ratio"] and r["cost_ratio"] > 1.10:
            found.setdefault(f"{where}: {r['cost_ratio']:.3f}x the bound ({used})", []).append(r["engine"])
    for r in results:
        if r.get("skipped"):
            found.setdefault(f"on {r['workload']}: skipped, {r['skipped']}", []).append(r["engine"])
    lines = [f"- {', '.join(who)} {text}" for text, who in found.items()]
    if len(engines) > 1:
        for w in dict.fromkeys(r["workload"] for r in done):
            plans = {(p["price_per_hour"], p["nodes"]) for e in engines if (p := by_key.get((w, e)))}
            if len(plans) > 1:
                lines.append(f"- {w}: engines disagree on price or node count: {sorted(plans)}")
    return ["## Worth a look", "", *(lines or ["- nothing flagged"]), ""]


def render(
    machine: Mapping[str, Any],
    engines: Sequence[str],
    workloads: Sequence[Workload],
    bounds: Mapping[str, Mapping[str, Any]],
    results: Sequence[Mapping[str, Any]],
    verdicts: Sequence[Verdict],
) -> str:
    lines = [
        "# Scheduling benchmark report",
        "",
        f"Generated by `python -m bench.run{machine['args']}` on {machine['date']} at commit "
        f"`{machine['commit']}`. Do not edit by hand: rerun. Plots: `solve_time.png`, `cost_vs_bound.png`; raw "
        "numbers: `results.json`.",
        "",
    ]
    lines += _guide(machine, engines, workloads)
    lines += _targets(verdicts)
    lines += _flags(results, engines)
    lines += ["## Results", ""]
    for w in workloads:
        rows = [r for r in results if r["workload"] == w.name]
        if rows:
            lines += _table(w, bounds[w.name], rows)
    return "\n".join(lines).rstrip() + "\n"
