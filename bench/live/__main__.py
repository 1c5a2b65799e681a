"""``python -m bench.live [--pods N] [--boot-delay S] [--label NAME]``: see ``bench/live/__init__.py``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.live import audit, critical, observe, operator_costs, phases, placement, report, scenario
from bench.live.supervise import Supervised
from bench.live.watch import FleetWatch, sample
from kapstan import scheduling
from kapstan.capi import contract as c
from kapstan.cli import simulate_files
from kapstan.kube.client import Client
from kapstan.kube.kinds import NODES
from kapstan.local import article
from kapstan.local.apply import apply
from kapstan.local.article import RUN_LABEL
from kapstan.local.operator import OperatorProcess
from kapstan.local.run import KapstanRun
from kapstan.local.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "live_results.json"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--down-to", type=float, default=0.7, help="share of the pods after scale-down")
    parser.add_argument("--boot-delay", type=int, default=10, help="the test provider's boot delay (s)")
    parser.add_argument("--label", default="", help="name of this run in LIVE.md (default: the commit)")
    parser.add_argument("--up-timeout", type=float, default=900)
    parser.add_argument("--quiet", type=float, default=120, help="no change this long = settled (s)")
    parser.add_argument("--down-timeout", type=float, default=600)
    parser.add_argument(
        "--steady",
        type=float,
        default=1800,
        help="seconds of steady state after the scale-down, counting disruptions (0: none)",
    )
    parser.add_argument(
        "--no-scale-down",
        action="store_true",
        help="measure the scale-up only (about 5 minutes instead of 15, for iterating on provisioning); "
        "LIVE.md shows the scale-down rows of such a run as skipped",
    )
    parser.add_argument(
        "--operator-source",
        type=Path,
        help="run the operator from this copy of operator/ (e.g. `git archive main operator`, with the "
        "built kapstan/_core*.so copied in), to measure another commit against this bench",
    )
    parser.add_argument("--operator-commit", default="", help="the commit --operator-source was taken from")
    parser.add_argument("--note", default="", help="a remark on the run, printed under the table")
    args = parser.parse_args()
    label = args.label or _git("rev-parse", "--short", "HEAD")
    result = asyncio.run(_bench(args, print))
    result["label"] = label
    result["note"] = args.note
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    results = [r for r in results if r["label"] != label] + [result]
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    (ROOT / "bench" / "LIVE.md").write_text(report.render(results))
    print(f"wrote {RESULTS.relative_to(ROOT)} and bench/LIVE.md ({label})")


async def _bench(args: argparse.Namespace, say: phases.Say) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="kapstan-live-"))
    sandbox = Sandbox(work / "sandbox", audit_policy=audit.write_policy(work / "audit-policy.yaml"))
    say(f"starting the sandbox in {work}")
    sandbox.up()
    try:
        return await _measure(sandbox, work, args, say)
    finally:
        # The operator's log, the audit log and those of the components that make Machines and Nodes
        # outlive the sandbox, for a look at what happened (the 3,000-pod run's Nodes that never came).
        kept = ("kapstan-live", "audit-", "kube-scheduler", "capt", "capi-manager", "kube-apiserver", "kwok")
        for log in (sandbox.directory / "logs").glob("*.log"):
            if log.name.startswith(kept):
                shutil.copy(log, work / log.name)
        say(f"logs kept in {work}")
        sandbox.down()


async def _measure(sandbox: Sandbox, work: Path, args: argparse.Namespace, say: phases.Say) -> dict[str, Any]:
    run = KapstanRun(sandbox, "live")
    await run.connect()
    client, _ = run.clients
    ns, pool = run.namespace, run.pool
    setup = [
        article.namespace(ns),
        *scenario.management(ns, run.cluster, args.boot_delay),
        article.node_class(pool),
        scenario.node_pool(pool, run.id),
    ]
    await apply(client, setup)
    kubeconfig = sandbox.service_account_kubeconfig(audit.NAMESPACE, audit.SERVICE_ACCOUNT)
    await apply(client, [audit.cluster_admin_binding()])
    smaller = int(args.pods * args.down_to)
    plans = {
        "scaleUp": _simulate(work, setup, ns, run.id, args.pods),
        "scaleDown": _simulate(work, setup, ns, run.id, smaller),
    }
    operator = OperatorProcess(
        directory=sandbox.directory,
        name="kapstan-live",
        cluster=f"{ns}/{run.cluster}",
        workload_kubeconfig=kubeconfig,
        management_kubeconfig=kubeconfig,
        lease=f"kapstan-{run.id}",
        env={"PYTHONPATH": str(args.operator_source)} if args.operator_source else {},
    ).start()
    await run.wait_for("kapstan to hold its Lease", run.lease_holder, 120)
    supervised = Supervised(operator).start()
    watch = await FleetWatch(client, ns, pool).start()
    try:
        return await _phases(sandbox, work, args, run, supervised, watch, plans, say)
    finally:
        await watch.stop()
        await supervised.stop()


async def _phases(
    sandbox: Sandbox,
    work: Path,
    args: argparse.Namespace,
    run: KapstanRun,
    operator: Supervised,
    watch: FleetWatch,
    plans: dict[str, Any],
    say: phases.Say,
) -> dict[str, Any]:
    client, _ = run.clients
    ns, pool = run.namespace, run.pool
    smaller = int(args.pods * args.down_to)
    load = {"start": os.getloadavg()}
    say(f"kapstan leads; applying {args.pods} pods")
    up = await phases.scale_up(
        client, watch, ns, run.id, args.pods, timeout=args.up_timeout, interval=2.0, say=say
    )
    up["operatorCpuSeconds"] = operator.cpu_seconds()
    up["operatorPeakRssMiB"] = operator.peak_rss_mib()
    up["criticalPath"] = await _critical_path(client, watch, ns, run.id, work)
    up["accounting"] = await _accounting(client, ns, pool, run.id)
    up["placement"] = await placement.dump(client, watch, ns, work / "placement.json")
    load["scaleUp"] = os.getloadavg()
    down: dict[str, Any] | None = None
    if not args.no_scale_down:
        say(f"scaling down to {smaller} pods")
        down = await phases.scale_down(
            client, watch, ns, smaller, quiet=args.quiet, timeout=args.down_timeout, interval=3.0, say=say
        )
        down["quietSeconds"] = args.quiet
        down["accounting"] = await _accounting(client, ns, pool, run.id)
    steady: dict[str, Any] | None = None
    if down is not None and args.steady > 0:
        say(f"steady state for {args.steady:.0f} s")
        steady = await phases.steady(watch, smaller, seconds=args.steady, interval=3.0, say=say)
        steady["accounting"] = await _accounting(client, ns, pool, run.id)
    await asyncio.sleep(3)  # the last requests of the phase reach the audit log
    log = sandbox.audit.log_of("sandbox") if sandbox.audit else work / "none"
    operator_log = sandbox.directory / "logs" / f"{operator.operator.name}.log"
    up["requests"] = audit.count(log, up["start"], up["end"]).to_json()
    up["batches"] = operator_costs.batches(operator_log, up["start"], up["end"])
    if down is not None:
        down["requests"] = audit.count(log, down["start"], down["end"]).to_json()
        down["commands"] = operator_costs.commands(operator_log, down["start"], down["end"])
    if steady is not None:
        steady["requests"] = audit.count(log, steady["start"], steady["end"]).to_json()
        steady["commands"] = operator_costs.commands(operator_log, steady["start"], steady["end"])
    load["end"] = os.getloadavg()
    totals = {
        "operatorCpuSeconds": operator.cpu_seconds(),
        "operatorPeakRssMiB": operator.peak_rss_mib(),
        "restartSeconds": [round(at - up["start"], 1) for at in operator.restarts],
    }
    return {
        "commit": args.operator_commit or _git("rev-parse", "--short", "HEAD"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "pods": args.pods,
        "downTo": smaller,
        "bootDelaySeconds": args.boot_delay,
        "engine": scheduling.default_engine(),
        "load": {phase: [round(x, 2) for x in avg] for phase, avg in load.items()},
        "simulate": plans,
        "scaleUp": up,
        "scaleDown": down,
        **({"steady": steady} if steady is not None else {}),
        "operator": totals,
    }


async def _critical_path(client: Client, watch: FleetWatch, ns: str, run: str, work: Path) -> dict[str, Any]:
    """Each claim's critical path summed up per step; the objects it was read from are kept in ``work``
    (``critical-path.json``, trimmed to what it reads) for a second look."""
    machines = await sample("the Machines", lambda: client.request("GET", c.MACHINES, namespace=ns))
    nodes = await sample(
        "the Nodes", lambda: client.request("GET", NODES, params={"labelSelector": f"{RUN_LABEL}={run}"})
    )
    fleet = watch.fleet()
    objects = {
        "claims": fleet.claims,
        "machines": (machines or {}).get("items", []),
        "nodes": (nodes or {}).get("items", []),
        "pods": fleet.workload(),
    }
    recorded = {kind: [critical.trimmed(obj) for obj in found] for kind, found in objects.items()}
    (work / "critical-path.json").write_text(json.dumps(recorded, indent=1) + "\n")
    return critical.summary(critical.paths(**objects))


async def _accounting(client: Client, ns: str, pool: str, run: str) -> dict[str, Any]:
    found, waited = await observe.accounting_at_rest(client, ns, pool, run)
    return {**found.to_json(), "waitedSeconds": waited}


def _simulate(work: Path, setup: list[dict[str, Any]], ns: str, run: str, pods: int) -> dict[str, Any]:
    """``kapstan simulate`` of the same manifests from an empty pool."""
    path = work / f"simulate-{pods}.yaml"
    path.write_text(yaml.safe_dump_all([*setup, *scenario.workloads(ns, run, pods)], sort_keys=False))
    _, plan = simulate_files([path], None)
    return {
        "nodes": len(plan.node_claims),
        "price": round(plan.total_price_per_hour, 4),
        "unschedulable": len(plan.unschedulable),
        "command": f"kapstan simulate -f {path.name}",
    }


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
