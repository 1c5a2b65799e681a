"""The live what-if on the sandbox: ``kapstan simulate --kubeconfig ... --cluster`` and ``kapstan report``
read the running clusters as the operator does and send nothing but GETs (every HTTP request the process
makes is recorded at httpx's transport, below kr8s); a v1alpha5 Provisioner in the cluster is named by
both ``simulate`` and ``kapstan run``."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner
from e2e_helpers import E2E

from kapstan.capi import contract as c
from kapstan.cli import main
from kapstan.controllers.unserved import NOT_SERVED
from kapstan.kube.client import Client
from kapstan.kube.errors import ApiError
from kapstan.kube.events import list_events
from kapstan.kube.kinds import PODS
from kapstan.local import article
from kapstan.local.apply import CRDS, apply, install_crds, resource_of

pytestmark = pytest.mark.sandbox

SCENARIOS = Path(__file__).parents[1] / "scenarios"
FLAVORS = {"whatif-c3-4": "c3-4", "whatif-c3-8": "c3-8", "whatif-c3-16": "c3-16"}
PROVISIONER_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "provisioners.karpenter.sh"},
    "spec": {
        "group": "karpenter.sh",
        "names": {
            "kind": "Provisioner",
            "plural": "provisioners",
            "singular": "provisioner",
            "listKind": "ProvisionerList",
        },
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1alpha5",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


@contextmanager
def http_requests() -> Iterator[list[tuple[str, str]]]:
    """Every (method, path) this process sends while the block runs."""
    sent: list[tuple[str, str]] = []
    original = httpx.AsyncClient.send

    async def send(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        sent.append((request.method, request.url.path))
        return await original(self, request, **kwargs)

    httpx.AsyncClient.send = send  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        httpx.AsyncClient.send = original  # type: ignore[method-assign]


def _kapstan(e2e: E2E, sent: list[tuple[str, str]], *args: str) -> Any:
    run = e2e.run
    base = [
        "--kubeconfig",
        str(run.sandbox.workload_kubeconfig),
        "--management-kubeconfig",
        str(run.sandbox.management_kubeconfig),
        "--cluster",
        f"{run.namespace}/{run.cluster}",
    ]
    with http_requests() as during:
        result = CliRunner().invoke(main, [*args, *base])
    sent += during
    assert result.exit_code == 0, result.output
    return result


def _unschedulable(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(x["type"] == "PodScheduled" and x.get("reason") == "Unschedulable" for x in conditions)


def _machine_intent(machine: dict[str, Any]) -> tuple[str, int, str, str, bool]:
    """What a write to a Machine by kapstan would change: its spec (generation), labels, annotations and
    deletion. Not its resourceVersion: CAPI writes the Machine's status on its own whenever the Node's
    conditions move (the sandbox's node lifecycle controller flips them on kubelet-less Nodes)."""
    meta = machine["metadata"]
    return (
        meta["name"],
        meta.get("generation", 0),
        json.dumps(meta.get("labels") or {}, sort_keys=True),
        json.dumps(meta.get("annotations") or {}, sort_keys=True),
        "deletionTimestamp" in meta,
    )


def _state(e2e: E2E) -> tuple[list[str], list[tuple[str, int, str, str, bool]], list[int]]:
    """What a write by the what-if would change: the claims' versions (only kapstan writes them, and the
    operator is stopped), the Machines' intent, the MDs' replicas."""
    run = e2e.run
    claims = sorted(cl["metadata"]["resourceVersion"] for cl in e2e(run.claims()))
    machines = sorted(_machine_intent(m) for m in e2e(run.machines()))
    mds = [
        c.replicas(e2e(run.clients[1].get(c.MACHINEDEPLOYMENTS, md, run.namespace))) for md in sorted(FLAVORS)
    ]
    return claims, machines, mds


def _not_served(client: Client, provisioner: dict[str, Any]) -> Callable[[], Awaitable[list[Any]]]:
    """The operator's NotServed Events on the Provisioner (matched by its uid)."""

    async def events() -> list[Any]:
        return [e for e in await list_events(client, provisioner) if e["reason"] == NOT_SERVED]

    return events


def test_the_live_what_if_plans_reports_and_consolidates_without_writing(e2e: E2E, tmp_path: Path) -> None:
    run = e2e.run
    ns = run.namespace
    wl, _ = run.clients
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, FLAVORS),
            [article.node_agent(ns, run.id), article.deployment("inflate", ns, run.id, 8, "1")],
        )
    )
    e2e(install_crds(wl, [PROVISIONER_CRD]))
    provisioner = yaml.safe_load((SCENARIOS / "intro-provisioner.yaml").read_text())
    (applied,) = e2e(apply(wl, [provisioner]))
    sent: list[tuple[str, str]] = []
    try:

        async def pending() -> bool:
            listed = await wl.request("GET", PODS, namespace=ns, params={"labelSelector": "app=inflate"})
            return len(listed["items"]) == 8 and all(_unschedulable(p) for p in listed["items"])

        e2e(run.wait_for("8 inflate pods Unschedulable", pending, 120))

        # 1. Pending pods: the article's benchmark answer, and no consolidation without nodes.
        result = _kapstan(e2e, sent, "simulate", "-o", "json")
        planned = json.loads(result.stdout)
        assert Counter(claim["instanceType"] for claim in planned["nodeClaims"]) == {"c3-16": 1, "c3-4": 1}
        assert sum(len(claim["pods"]) for claim in planned["nodeClaims"]) == 8
        assert planned["consolidation"]["decision"] is None
        assert "Provisioner default (the workload cluster) is karpenter.sh/v1alpha5" in result.stderr
        table = _kapstan(e2e, sent, "simulate").stdout
        assert "2 new nodes" in table
        assert "consolidation now: nothing to do (0 candidate nodes)" in table
        assert e2e(run.claims()) == []

        # 2. The operator names the Provisioner too, then provisions as simulate said.
        operator = run.start_operator()

        async def running() -> bool:
            return await run.running_pods("inflate") == 8

        e2e(run.wait_for("8 inflate pods Running", running, 240))
        assert "Provisioner default (the workload cluster) is karpenter.sh/v1alpha5" in operator.log(400)
        # And says so on the Provisioner, once: its later looks add nothing (count 1).
        (event,) = e2e(run.wait_for("a NotServed Event on the Provisioner", _not_served(wl, applied), 60))
        assert (event["type"], event["count"]) == ("Warning", 1)
        assert "convert it with `kapstan convert -f FILE`" in event["message"]
        made = Counter(
            cl["metadata"]["labels"]["node.kubernetes.io/instance-type"] for cl in e2e(run.claims())
        )
        assert made == {"c3-16": 1, "c3-4": 1}
        operator.stop()
        before = _state(e2e)

        # 3. The report: the same pods from scratch need the same two nodes.
        page = tmp_path / "report.html"
        result = _kapstan(e2e, sent, "report", "--html", str(page))
        assert "saving from scratch: 0.0000/h" in result.stdout
        root = ET.fromstring(page.read_text().split("\n", 1)[1])
        bars = {
            (r.get("data-group"), r.get("data-side")): float(r.get("data-price", "0"))
            for r in root.iter("{http://www.w3.org/2000/svg}rect")
            if r.get("data-side")
        }
        assert bars == {
            (f"{run.pool} c3-16", "now"): 12.0,
            (f"{run.pool} c3-16", "kapstan"): 12.0,
            (f"{run.pool} c3-4", "now"): 3.0,
            (f"{run.pool} c3-4", "kapstan"): 3.0,
            ("total", "now"): 15.0,
            ("total", "kapstan"): 15.0,
        }

        # 4. Consolidation now: with inflate gone both nodes are empty; the default budget (10% of 2 nodes,
        # rounded up) lets one go per pass, so the loop would delete one of them now.
        deployments = e2e(resource_of(wl, {"apiVersion": "apps/v1", "kind": "Deployment"}))
        e2e(wl.delete(deployments, "inflate", ns))
        deadline = time.monotonic() + 120
        decision = None
        while decision is None and time.monotonic() < deadline:
            time.sleep(3)
            found = json.loads(_kapstan(e2e, sent, "simulate", "-o", "json").stdout)["consolidation"]
            decision = found["decision"]
        assert decision is not None, f"no consolidation decided: {found}"
        assert (found["reason"], decision["kind"], decision["replacements"]) == ("empty", "delete", [])
        (removed,) = decision["remove"]
        assert removed["nodeClaim"] in {cl["metadata"]["name"] for cl in e2e(run.claims())}
        assert (
            decision["savingPerHour"]
            == removed["pricePerHour"]
            == {"c3-16": 12.0, "c3-4": 3.0}[removed["instanceType"]]
        )
        assert _state(e2e) == before, "the what-if changed the cluster"
    finally:
        try:
            e2e(wl.delete(CRDS, PROVISIONER_CRD["metadata"]["name"]))
        except ApiError as error:
            if not error.not_found:
                raise
        if run.operators and not run.operators[-1].running:
            run.start_operator()  # cleanup terminates the claims through kapstan
    assert {method for method, _ in sent} == {"GET"}, sorted(set(sent))
    assert any(path.endswith("/pods") for _, path in sent)
    assert any(path.endswith("/machinedeployments") for _, path in sent)
