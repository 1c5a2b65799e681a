"""Drift on the sandbox: a new KubeadmConfigTemplate revision for a worker class makes its Machines
drifted, and kapstan replaces their nodes one at a time under a budget of 1."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_helpers import E2E

from kapstan.api.wellknown import unregistered_taint
from kapstan.capi import contract as c
from kapstan.local import article
from kapstan.local.apply import apply
from kapstan.local.manifests import kubeadm_config_template
from kapstan.local.run import KapstanRun

pytestmark = pytest.mark.sandbox


def _on_delete(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worker classes that CAPI does not roll out by itself: kapstan replaces drifted nodes."""
    for obj in manifests:
        if obj["kind"] == "ClusterClass":
            for worker in obj["spec"]["workers"]["machineDeployments"]:
                worker["rollout"] = {"strategy": {"type": "OnDelete"}}
    return manifests


async def _bootstrap_ref(run: KapstanRun) -> str:
    mds = (await run.clients[1].request("GET", c.MACHINEDEPLOYMENTS, namespace=run.namespace))["items"]
    [md] = mds
    return str(md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"])


def _drifted_setup(e2e: E2E) -> set[str]:
    """Three c3-4 nodes of worker class c3-4, then a new bootstrap template revision for the class;
    returns the original NodeClaims' names once the topology points the MD at the new revision."""
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            _on_delete(article.with_class(ns, run.cluster, "ovh", ["c3-4"])),
            [article.deployment("app", ns, run.id, 3, "500m", anti_affinity=True)],
            disruption={
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "Never",
                "budgets": [{"nodes": "1"}],
            },
        )
    )
    run.start_operator()

    async def running() -> bool:
        return await run.running_pods("app") == 3

    e2e(run.wait_for("three app pods Running", running, 240))
    original = {cl["metadata"]["name"] for cl in e2e(run.claims())}
    assert len(original) == 3
    before = e2e(_bootstrap_ref(run))
    # A new revision of the worker class's bootstrap template, as a user would roll one out.
    revision = kubeadm_config_template("c3-4-v2", ns, [unregistered_taint()])
    revision["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"] = [
        {"name": "v", "value": "2"}
    ]
    e2e(apply(run.clients[1], [revision]))
    e2e(
        run.clients[1].patch(
            c.CLUSTERCLASSES,
            "ovh",
            [
                {
                    "op": "replace",
                    "path": "/spec/workers/machineDeployments/0/bootstrap/templateRef/name",
                    "value": "c3-4-v2",
                }
            ],
            namespace=ns,
            patch_type="json",
        )
    )

    async def retargeted() -> bool:
        return await _bootstrap_ref(run) != before

    e2e(run.wait_for("the topology pointing the MD at the new revision", retargeted, 60))
    return original


def test_a_drifted_node_is_replaced_first_and_one_at_a_time_under_a_budget_of_1(e2e: E2E) -> None:
    run = e2e.run
    original = _drifted_setup(e2e)

    async def first_replaced() -> bool:
        claims = await run.claims()
        new = [cl for cl in claims if cl["metadata"]["name"] not in original]
        going = [
            cl
            for cl in claims
            if cl["metadata"]["name"] in original and cl["metadata"].get("deletionTimestamp")
        ]
        initialized = any(
            cond["type"] == "Initialized" and cond["status"] == "True"
            for cl in new
            for cond in cl.get("status", {}).get("conditions") or []
        )
        return len(new) == 1 and initialized and len(going) == 1

    e2e(run.wait_for("one drifted node replaced by an Initialized one, then drained", first_replaced, 180))
    # That the next drifted node waits for this command to finish is checked over the whole rollout by
    # test_a_new_bootstrap_template_revision_replaces_the_nodes_one_at_a_time.


def test_a_new_bootstrap_template_revision_replaces_the_nodes_one_at_a_time(e2e: E2E) -> None:
    run = e2e.run
    original = _drifted_setup(e2e)

    most_going = 0
    most_claims = 0

    async def replaced() -> bool:
        nonlocal most_going, most_claims
        claims = await run.claims()
        going = sum(
            1
            for cl in claims
            if cl["metadata"]["name"] in original and cl["metadata"].get("deletionTimestamp")
        )
        most_going = max(most_going, going)
        most_claims = max(most_claims, len(claims))
        names = {cl["metadata"]["name"] for cl in claims}
        return not names & original and len(names) == 3 and await run.running_pods("app") == 3

    e2e(run.wait_for("every drifted node replaced", replaced, 600))
    assert most_going <= 1
    assert most_claims <= 4  # one replacement at a time
    machines = e2e(run.machines())
    assert len(machines) == 3
    log = run.operators[0].log(2000)
    assert log.count("disrupting via drifted replace: removing") == 3
