"""``kapstan demo``: the article's story, live, on a sandbox of its own.

Act 1 is the article's flow: a MachineDeployment whose bootstrap template lacks the unregistered taint,
the article's NodePool and NodeClass, and ``inflate`` (2 replicas that refuse to share a node). kapstan
taints the template in a new revision, scales the MD 0 -> 2, registers both nodes, and the pods run; then
``inflate`` is deleted and, after the NodePool's consolidateAfter (30 s) and the disruption validation delay
(15 s), kapstan removes the empty nodes and their Machines one at a time (the default budget, 10% of the
pool's nodes, rounds up to one), and the MD is back at 0.
Act 2 is the article's benchmark on a cold pool of c3-4, c3-8 and c3-16: 8 pods of 1 CPU get one c3-16
and one c3-4, where a name-sorted pick takes two c3-16. Everything prints as a timeline, and the sandbox
is torn down at the end (or on Ctrl-C).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from kapstan.capi import contract as c
from kapstan.kube.client import Resource
from kapstan.local import article
from kapstan.local.run import KapstanRun
from kapstan.local.sandbox import Sandbox
from kapstan.local.sources import build
from kapstan.local.timeline import format_entry

Say = Callable[[str], None]
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
"""The demo's workloads; kapstan itself never touches Deployments (and has no RBAC for them)."""


def run_demo(say: Say = print, keep: bool = False) -> None:
    art = build()  # prints its progress; a cache hit on every run after the first
    directory = Path(tempfile.mkdtemp(prefix="kapstan-demo-"))
    sandbox = Sandbox(directory / "sandbox")
    say(f"starting the sandbox in {directory} (etcd, kube-apiserver, scheduler, kwok, Cluster API)")
    sandbox.up(art)  # given the build, so the cache is not looked up (and reported) a second time
    try:
        asyncio.run(_acts(sandbox, say))
    finally:
        if keep:
            say(
                f"sandbox kept: export KUBECONFIG={sandbox.kubeconfig}; `kapstan local down --dir {sandbox.directory}`"
            )
        else:
            say("tearing the sandbox down")
            sandbox.down()
            shutil.rmtree(directory, ignore_errors=True)


async def _acts(sandbox: Sandbox, say: Say) -> None:
    say("\n== Act 1: the article's flow (MD capi-ovh-karpenter, c3-4, template without the taint)")
    await _act(
        sandbox,
        say,
        "article",
        {"capi-ovh-karpenter": "c3-4"},
        "inflate",
        2,
        "500m",
        tainted=False,
        scale_down=True,
    )
    say("\n== Act 2: the article's benchmark, 8 pods of 1 CPU on a cold pool of c3-4 / c3-8 / c3-16")
    pools = {"c3-4": "c3-4", "c3-8": "c3-8", "c3-16": "c3-16"}
    machines = await _act(sandbox, say, "bench", pools, "inflate", 8, "1")
    chosen = ", ".join(f"{count} x {md}" for md, count in sorted(machines.items()))
    # The upstream figure is the benchmark's upstream-capi row of article-8x1cpu (bench/PEERS.md: 1.6x).
    say(f"kapstan chose {chosen}; the upstream CAPI provider, sorting flavors by name, takes 2 x c3-16")


async def _act(
    sandbox: Sandbox,
    say: Say,
    prefix: str,
    pools: dict[str, str],
    app: str,
    replicas: int,
    cpu: str,
    *,
    tainted: bool = True,
    scale_down: bool = False,
) -> Counter[str]:
    run = KapstanRun(sandbox, prefix, on_entry=lambda seconds, text: say(format_entry(seconds, text)))
    await run.connect()
    ns = run.namespace
    try:
        workloads = [
            article.node_agent(ns, run.id),
            article.deployment(app, ns, run.id, replicas, cpu, anti_affinity=replicas == 2),
        ]
        await run.setup(article.standalone(ns, run.cluster, pools, tainted=tainted), workloads)
        run.start_operator()

        async def all_running() -> bool:
            return await run.running_pods(app) == replicas

        await run.wait_for(f"{replicas} {app} pods Running", all_running, 300)
        machines = Counter(c.labels_of(m).get(c.DEPLOYMENT_NAME_LABEL, "") for m in await run.machines())
        if scale_down:
            # Said, since the first removal comes some 45 s later and the second 20 s after it.
            say(
                f"deleting {app}: its nodes are empty; kapstan removes them one at a time (the default budget,"
                " 10% of the nodes, rounds up to one), the first after the NodePool's consolidateAfter (30 s)"
                " and the disruption validation delay (15 s)"
            )
            wl, _ = run.clients
            await wl.delete(DEPLOYMENTS, app, ns)

            async def back_to_zero() -> bool:
                return not await run.machines() and not await run.claims()

            await run.wait_for("the empty nodes gone and the MD back to 0", back_to_zero, 180)
        return machines
    finally:
        say(
            "cleaning up: workloads and NodePool deleted, kapstan drains the nodes and removes their Machines"
        )
        await run.cleanup()
