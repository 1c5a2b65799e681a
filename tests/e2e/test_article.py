"""The article's flows on the sandbox: real API server, real scheduler, real Cluster API, kwok nodes,
and ``kapstan run`` as a process."""

from __future__ import annotations

import urllib.request
from collections import Counter

import pytest
from e2e_helpers import E2E, inflate_running

from kapstan.capi import contract as c
from kapstan.kube.events import list_events
from kapstan.local import article

pytestmark = pytest.mark.sandbox


def _flavors(machines: list[dict]) -> Counter[str]:
    return Counter(c.labels_of(m).get(c.DEPLOYMENT_NAME_LABEL, "") for m in machines)


@pytest.fixture(params=["one API server", "management and workload apart"])
def article_run(request: pytest.FixtureRequest) -> E2E:
    fixture = "e2e" if request.param == "one API server" else "e2e_two_clusters"
    harness: E2E = request.getfixturevalue(fixture)
    return harness


def test_inflate_two_replicas_with_anti_affinity_runs_on_two_new_nodes(article_run: E2E) -> None:
    e2e = article_run
    run = e2e.run
    ns = run.namespace
    inflate_running(e2e)

    async def both_initialized() -> bool:
        return await run.initialized_claims() == 2

    e2e(run.wait_for("both claims Launched, Registered and Initialized", both_initialized, 60))
    claims = e2e(run.claims())
    assert len(claims) == 2
    for claim in claims:
        assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "c3-4"
    machines = e2e(run.machines())
    assert _flavors(machines) == {"capi-ovh-karpenter": 2}
    assert all(m["metadata"]["annotations"].get("kapstan.io/nodeclaim") for m in machines)
    md = e2e(run.clients[1].get(c.MACHINEDEPLOYMENTS, "capi-ovh-karpenter", ns))
    assert c.replicas(md) == 2
    # The article's template lacked the unregistered taint: kapstan made a new revision with it.
    revision = md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"]
    assert revision != "capi-ovh-karpenter"
    template = e2e(run.clients[1].get(c.KUBEADMCONFIGTEMPLATES, revision, ns))
    taints = template["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["taints"]
    assert {"key": "karpenter.sh/unregistered", "effect": "NoExecute"} in taints
    original = e2e(run.clients[1].get(c.KUBEADMCONFIGTEMPLATES, "capi-ovh-karpenter", ns))
    assert not original["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"].get("taints")
    reasons = {event["reason"] for event in e2e(list_events(run.clients[1], md))}
    assert "TemplateTainted" in reasons
    operator = run.operators[0]
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/readyz", timeout=5) as ready:
        assert ready.status == 200
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5) as scraped:
        exposition = scraped.read().decode()
    created = f'karpenter_nodeclaims_created_total{{nodepool="{run.pool}",reason="provisioned"}} 2.0'
    assert created in exposition
    # Pods may run on a Ready node a moment before the claim records Initialized, and the timeline polls:
    # the order of those two is not asserted, only that the timeline ends up with every step.
    timeline = run.timeline
    assert timeline is not None
    steps = [
        f"NodeClaim {claim['metadata']['name']} {step}"
        for claim in claims
        for step in ("created", "Launched", "Registered", "Initialized")
    ]

    async def every_step_seen() -> bool:
        return all(any(text.startswith(step) for text in timeline.texts()) for step in steps)

    e2e(run.wait_for("every claim's steps on the timeline", every_step_seen, 10))
    counts = [text for text in timeline.texts() if text.startswith("pods Running")]
    assert counts[-1] == "pods Running 2/2"


async def _claim_flavors(e2e: E2E) -> Counter[str]:
    claims = await e2e.run.claims()
    return Counter(claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] for claim in claims)


ARTICLE_POOLS = {
    "capi-ovh-karpenter-c3-4": "c3-4",
    "capi-ovh-karpenter-c3-8": "c3-8",
    "capi-ovh-karpenter-c3-16": "c3-16",
}


@pytest.mark.parametrize(
    ("replicas", "cpu", "expected"),
    [
        (8, "1", {"capi-ovh-karpenter-c3-16": 1, "capi-ovh-karpenter-c3-4": 1}),
        (1, "3", {"capi-ovh-karpenter-c3-8": 1}),
    ],
    ids=["8x1cpu", "1x3cpu"],
)
def test_the_articles_benchmark_on_a_cold_pool(
    e2e: E2E, replicas: int, cpu: str, expected: dict[str, int]
) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, ARTICLE_POOLS),
            [article.node_agent(ns, run.id), article.deployment("inflate", ns, run.id, replicas, cpu)],
        )
    )
    run.start_operator()

    async def all_running() -> bool:
        return await run.running_pods("inflate") == replicas

    e2e(run.wait_for(f"{replicas} inflate pods Running", all_running, 180))
    assert _flavors(e2e(run.machines())) == expected
    assert sum(e2e(_claim_flavors(e2e)).values()) == sum(expected.values())


def test_a_clusterclass_cluster_gets_topology_entries_for_the_chosen_classes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.with_class(ns, run.cluster, "ovh", ["c3-8", "c3-4", "c3-16"]),
            [article.node_agent(ns, run.id), article.deployment("inflate", ns, run.id, 8, "1")],
        )
    )
    run.start_operator()

    async def all_running() -> bool:
        return await run.running_pods("inflate") == 8

    e2e(run.wait_for("8 inflate pods Running", all_running, 240))
    assert e2e(_claim_flavors(e2e)) == {"c3-16": 1, "c3-4": 1}
    cluster = e2e(run.clients[1].get(c.CLUSTERS, run.cluster, ns))
    entries = {entry["name"]: entry for entry in c.topology_entries(cluster)}
    assert set(entries) == {"c3-16", "c3-8", "c3-4"}  # c3-8 was there; kapstan added the other two
    assert all("replicas" not in entry for entry in entries.values())
    machines = e2e(run.machines())
    assert len(machines) == 2
    deployments = {m["metadata"]["labels"].get(c.DEPLOYMENT_NAME_LABEL) for m in machines}
    mds = e2e(run.clients[1].request("GET", c.MACHINEDEPLOYMENTS, namespace=ns))["items"]
    by_entry = {md["metadata"]["labels"][c.TOPOLOGY_DEPLOYMENT_LABEL]: c.name(md) for md in mds}
    assert deployments == {by_entry["c3-16"], by_entry["c3-4"]}
