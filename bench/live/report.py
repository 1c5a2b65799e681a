"""``bench/LIVE.md`` from the accumulated results: one column per run, one row per figure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.live import scenario

Row = tuple[str, Callable[[dict[str, Any]], str]]


def _seconds(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.0f} s"


def _versus(live: float, planned: float) -> str:
    return f"{live:g} vs {planned:g} ({(live / planned - 1) * 100:+.1f}%)" if planned else f"{live:g}"


def _placement(up: dict[str, Any]) -> str:
    placed = up.get("placement")
    if not placed:
        return "not recorded"
    return f"{placed.get('boundAsPlanned', 0)} of {placed.get('planned', 0)}"


def _verbs(requests: dict[str, Any]) -> str:
    return ", ".join(f"{verb} {n}" for verb, n in requests["byVerb"].items())


def _accounting(acc: dict[str, Any]) -> str:
    figures = f"{acc['nodeClaims']} / {acc['machines']} / {acc['nodes']} / {acc['replicas']}"
    waited = acc.get("waitedSeconds", 0)
    after = f" (after {waited:.0f} s)" if waited >= 1 else ""
    return figures + (f" exact{after}" if acc["exact"] else f" **MISMATCH**{after}")


def _quiet_in_time(down: dict[str, Any]) -> str:
    """The issue's target: no change for the quiet time, reached within 300 s of the scale-down."""
    quiet = down.get("quietSeconds", 120)
    if not down["settled"]:
        return "no"
    done = down["settleSeconds"] + quiet
    return f"{'yes' if done <= 300 else 'no'} ({done:.0f} s)"


def _steady(figure: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    """A steady-state cell, or "not run" for the runs before the phase existed."""
    return lambda r: figure(r["steady"]) if "steady" in r else "not run"


def _down(cell: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    """A scale-down row's cell, or "skipped" for a run with ``--no-scale-down``."""
    return lambda r: "skipped" if r["scaleDown"] is None else cell(r)


def _batches(up: dict[str, Any]) -> str:
    if "batches" not in up:
        return "not recorded"
    batches = up["batches"]
    first = f", the first {batches[0]['pods']} pods -> {batches[0]['nodeClaims']} claims" if batches else ""
    return f"{len(batches)} solves, {sum(b['nodeClaims'] for b in batches)} claims opened{first}"


def _registration(up: dict[str, Any]) -> str:
    if "registrationP50Seconds" not in up:
        return "not recorded"
    return f"{up['registrationP50Seconds']:.0f} s / {up['registrationP90Seconds']:.0f} s"


def _starved(up: dict[str, Any]) -> str:
    if "nodeAgentPendingAtAllRunning" not in up:
        return "not counted"
    left = up["nodeAgentPendingAtAllRunning"]
    return "not reached" if left is None else str(left)


def _batch(batch: dict[str, Any]) -> str:
    flavors = ", ".join(f"{n} {f}" for f, n in sorted(batch["flavors"].items()))
    return f"T+{batch['seconds']:.0f} s: {batch['pods']} pods, {batch['nodeClaims']} claims" + (
        f" ({flavors})" if flavors else ""
    )


def _timeline(up: dict[str, Any]) -> str:
    if "timeline" not in up:
        return "not recorded"
    return "; ".join(f"{step} {p50:.0f} / {last:.0f} s" for step, (p50, last) in up["timeline"].items())


def _critical(up: dict[str, Any]) -> str:
    if "criticalPath" not in up:
        return "not recorded"
    return "; ".join(f"{step} {s['p50']:.0f} / {s['max']:.0f} s" for step, s in up["criticalPath"].items())


def _restarts(operator: dict[str, Any]) -> str:
    if "restartSeconds" not in operator:
        return "not watched"
    restarts = operator["restartSeconds"]
    return ", ".join(f"T+{at:.0f} s" for at in restarts) if restarts else "0"


def _lowest(down: dict[str, Any]) -> str:
    return ", ".join(f"{name} {share * 100:.0f}%" for name, share in down["lowestAvailability"].items())


ROWS: list[Row] = [
    ("pods (scale-up) -> after scale-down", lambda r: f"{r['pods']} -> {r['downTo']}"),
    (
        "load average (1 min) at start / after scale-up / end",
        lambda r: " / ".join(f"{v[0]:.1f}" for v in r["load"].values()),
    ),
    (
        "all pods created",
        lambda r: (
            _seconds(r["scaleUp"]["allCreatedSeconds"])
            if "allCreatedSeconds" in r["scaleUp"]
            else "not recorded"
        ),
    ),
    ("first NodeClaim", lambda r: _seconds(r["scaleUp"]["firstClaimSeconds"])),
    ("provisioner batches (scale-up)", lambda r: _batches(r["scaleUp"])),
    ("all NodeClaims Launched", lambda r: _seconds(r["scaleUp"]["allLaunchedSeconds"])),
    (
        "created -> Launched p50 / p90",
        lambda r: f"{r['scaleUp']['launchP50Seconds']:.0f} s / {r['scaleUp']['launchP90Seconds']:.0f} s",
    ),
    ("Node joined -> Registered p50 / p90", lambda r: _registration(r["scaleUp"])),
    ("scale-up steps, p50 / last (from the apply)", lambda r: _timeline(r["scaleUp"])),
    ("each claim's critical path, p50 / max per step", lambda r: _critical(r["scaleUp"])),
    ("50% of pods Running", lambda r: _seconds(r["scaleUp"]["halfRunningSeconds"])),
    ("all pods Running", lambda r: _seconds(r["scaleUp"]["allRunningSeconds"])),
    ("nodes, live vs simulate", lambda r: _versus(r["scaleUp"]["nodes"], r["simulate"]["scaleUp"]["nodes"])),
    (
        "price/h, live vs simulate",
        lambda r: _versus(r["scaleUp"]["price"], r["simulate"]["scaleUp"]["price"]),
    ),
    ("live flavors", lambda r: ", ".join(f"{n} {f}" for f, n in r["scaleUp"]["flavors"].items())),
    ("pods bound on the Node of the claim last planned for them", lambda r: _placement(r["scaleUp"])),
    ("node-agent pods Pending (peak)", lambda r: str(r["scaleUp"]["nodeAgentPendingPeak"])),
    (
        "node-agent pods Pending when every workload pod runs (starved)",
        lambda r: _starved(r["scaleUp"]),
    ),
    (
        "node-agent pods Pending 30 s or more (peak)",
        lambda r: str(r["scaleUp"].get("nodeAgentStarvedPeak", "not counted")),
    ),
    (
        "MD scale writes / 409 Conflict",
        lambda r: f"{r['scaleUp']['requests']['scaleWrites']} / {r['scaleUp']['requests']['scaleConflicts']}",
    ),
    (
        "kapstan API requests (scale-up)",
        lambda r: (
            f"{r['scaleUp']['requests']['total']} ({r['scaleUp']['requests']['total'] / r['pods']:.2f} per pod)"
        ),
    ),
    ("  by verb", lambda r: _verbs(r["scaleUp"]["requests"])),
    ("  409 Conflict on any write", lambda r: str(r["scaleUp"]["requests"]["conflicts"])),
    (
        "operator CPU s / peak RSS (scale-up)",
        lambda r: (
            f"{r['scaleUp']['operatorCpuSeconds']:.0f} s / {r['scaleUp']['operatorPeakRssMiB']:.0f} MiB"
        ),
    ),
    (
        "accounting after scale-up (claims / Machines / Nodes / replicas)",
        lambda r: _accounting(r["scaleUp"]["accounting"]),
    ),
    (
        "scale-down: settled (no change for the quiet time)",
        _down(lambda r: "yes" if r["scaleDown"]["settled"] else "**no** (timed out)"),
    ),
    ("scale-down: last change (settle time)", _down(lambda r: _seconds(r["scaleDown"]["settleSeconds"]))),
    (
        "scale-down: quiet within 300 s (last change + quiet time)",
        _down(lambda r: _quiet_in_time(r["scaleDown"])),
    ),
    ("scale-down: disruption commands", _down(lambda r: str(len(r["scaleDown"]["commands"])))),
    (
        "scale-down: NodeClaims removed / created",
        _down(lambda r: f"{r['scaleDown']['claimsRemoved']} / {r['scaleDown']['claimsCreated']}"),
    ),
    ("scale-down: evictions", _down(lambda r: str(r["scaleDown"]["requests"]["evictions"]))),
    ("scale-down: longest Pending pod", _down(lambda r: f"{r['scaleDown']['longestPendingSeconds']:.0f} s")),
    ("scale-down: lowest availability", _down(lambda r: _lowest(r["scaleDown"]))),
    (
        "scale-down: nodes, live vs simulate",
        _down(lambda r: _versus(r["scaleDown"]["nodes"], r["simulate"]["scaleDown"]["nodes"])),
    ),
    (
        "scale-down: price/h, live vs simulate",
        _down(lambda r: _versus(r["scaleDown"]["price"], r["simulate"]["scaleDown"]["price"])),
    ),
    (
        "scale-down: kapstan API requests",
        _down(lambda r: f"{r['scaleDown']['requests']['total']} ({_verbs(r['scaleDown']['requests'])})"),
    ),
    ("accounting at the end", _down(lambda r: _accounting(r["scaleDown"]["accounting"]))),
    ("steady state: seconds watched", _steady(lambda st: f"{st['seconds']:.0f} s")),
    ("steady state: disruption commands", _steady(lambda st: str(len(st["commands"])))),
    (
        "steady state: NodeClaims removed / created",
        _steady(lambda st: f"{st['claimsRemoved']} / {st['claimsCreated']}"),
    ),
    ("steady state: evictions", _steady(lambda st: str(st["requests"]["evictions"]))),
    ("steady state: longest Pending pod", _steady(lambda st: f"{st['longestPendingSeconds']:.0f} s")),
    ("steady state: price/h at the end", _steady(lambda st: f"{st['price']:g}")),
    ("steady state: accounting at the end", _steady(lambda st: _accounting(st["accounting"]))),
    (
        "operator CPU s / peak RSS (whole run)",
        lambda r: (
            f"{r['operator']['operatorCpuSeconds']:.0f} s / {r['operator']['operatorPeakRssMiB']:.0f} MiB"
        ),
    ),
    ("operator restarts (lost its Lease and exited; T+ s)", lambda r: _restarts(r["operator"])),
]

HEADER = """# kapstan live benchmark (issue 14)

Measured by `python -m bench.live --pods N --label LABEL` on the sandbox (`kapstan.local`: real
kube-apiserver, kube-scheduler, kwok, Cluster API v1.14.2 core manager, our test provider), one column
per run. The fleet: {flavors} in {zones} ({mds} managed MDs), {boot} s boot delay, one NodePool
(`WhenEmptyOrUnderutilized`, `consolidateAfter: 30s`, budget `nodes: 20%`), a node-agent DaemonSet
(100m / 128Mi), six Deployments ({workloads}; web and api spread hard over zones), each with a PDB of
`maxUnavailable: 10%`. Scale-up: from an empty pool to N pods, timed from the apply. Scale-down: the
Deployments to 70%, settled once the set of NodeClaims has not changed for 120 s with every pod Running
(the phase gives up after 600 s); a run with `--no-scale-down` measures the scale-up only. Steady state
(`--steady SECONDS`, 1800 by default; the rows before it have none): the fleet watched that long after
the scale-down with nothing changed, counting disruption commands, NodeClaims created and removed and
evictions. The accounting is read once it is exact (up to 120 s; the wait is shown), since a NodeClaim
made a moment before has no Machine yet.

How each figure is taken: times from the bench's polling (every 2 s during scale-up, 3 s after) and the
NodeClaims' `Launched` condition times (and `Registered`'s against their Node's creation, the time
registration kept the unregistered taint for the DaemonSets); "simulate" is `kapstan simulate` of the very manifests applied
(the file is written next to the sandbox); kapstan's API requests come from the kube-apiserver's audit
log, with a policy that logs only kapstan's identity (the operator runs as ServiceAccount
`kube-system/kapstan-bench`, bound to cluster-admin; watches still open at the end are not counted);
scale writes are PATCHes of `machinedeployments/scale`; operator CPU and peak RSS are `/proc/PID/stat`
utime+stime and `VmHWM`; disruption commands are the operator's log lines that start one; "all pods
created" is the first poll that finds N workload pods (the controller-manager's pace); the provisioner's
batches are its `solved` log lines (the pods it planned, those not already on an in-flight claim) and the
`created nodeclaim` lines after each. The machine is
shared by several engineers (2 cores): the load average is recorded with each run.

"""


def render(results: list[dict[str, Any]]) -> str:
    first = results[0]
    text = HEADER.format(
        flavors=", ".join(f"{f.name} ({f.cpu} CPU / {f.memory}, {f.price}/h)" for f in scenario.FLAVORS),
        zones=", ".join(scenario.ZONES),
        mds=len(scenario.FLAVORS) * len(scenario.ZONES),
        boot=first["bootDelaySeconds"],
        workloads=", ".join(f"{w.name} {w.share:.0%} of {w.cpu} / {w.memory}" for w in scenario.WORKLOADS),
    )
    labels = [f"{r['label']} ({r['commit']}, {r['date']})" for r in results]
    text += "| | " + " | ".join(labels) + " |\n|---|" + "---|" * len(results) + "\n"
    for name, cell in ROWS:
        text += f"| {name} | " + " | ".join(cell(r) for r in results) + " |\n"
    notes = [f"- {r['label']}: {r['note']}\n" for r in results if r.get("note")]
    if notes:
        text += "\nNotes on the runs:\n\n" + "".join(notes)
    for r in results:
        if r["scaleUp"].get("batches"):
            text += f"\n## {r['label']}: scale-up batches (T+ seconds, pods planned, claims opened)\n\n"
            text += "".join(f"- {_batch(b)}\n" for b in r["scaleUp"]["batches"][:40])
        if r["scaleDown"] is None:
            continue
        commands = r["scaleDown"]["commands"]
        text += f"\n## {r['label']}: scale-down commands ({len(commands)})\n\n"
        text += "".join(f"- T+{c['seconds']:.0f} s: {c['message']}\n" for c in commands[:30])
        if len(commands) > 30:
            text += f"- ... and {len(commands) - 30} more\n"
    return text
