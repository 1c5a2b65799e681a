"""Disruption on the sandbox: empty nodes leave and their MD goes back to 0, exactly the empty Machine is
removed, under-used nodes are consolidated within a PodDisruptionBudget, one large node is replaced by two
cheaper ones, and blocks hold."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from e2e_helpers import E2E

from kapstan.api.wellknown import DISRUPTION_COMMAND_ANNOTATION, DISRUPTION_REPLACEMENT_ANNOTATION
from kapstan.capi import contract as c
from kapstan.kube.client import Resource
from kapstan.kube.events import list_events
from kapstan.kube.informer import Informer
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS, NODES, PODS
from kapstan.kube.store import Event
from kapstan.local import article
from kapstan.local.apply import apply
from kapstan.local.run import KapstanRun

pytestmark = pytest.mark.sandbox

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")


async def _pods(run: KapstanRun, app: str) -> list[dict[str, Any]]:
    wl, _ = run.clients
    found = await wl.request("GET", PODS, namespace=run.namespace, params={"labelSelector": f"app={app}"})
    return [p for p in found.get("items", []) if not p["metadata"].get("deletionTimestamp")]


async def _replicas(run: KapstanRun, md: str) -> int:
    return c.replicas(await run.clients[1].get(c.MACHINEDEPLOYMENTS, md, run.namespace))


def _spread(deployment: dict[str, Any], group: str) -> dict[str, Any]:
    """One pod per node across every deployment of ``group`` (required anti-affinity on a shared label)."""
    template = deployment["spec"]["template"]
    template["metadata"]["labels"]["group"] = group
    template["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"group": group}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    return deployment


def _metrics(run: KapstanRun) -> str:
    port = run.operators[-1].metrics_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as scraped:
        return str(scraped.read().decode())


def test_scale_to_zero_deleting_inflate_empties_the_md_within_90s(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    md = "capi-ovh-karpenter"
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {md: "c3-4"}, tainted=False),
            [
                article.node_agent(ns, run.id),
                article.deployment("inflate", ns, run.id, 2, "500m", anti_affinity=True),
            ],
        )
    )
    run.start_operator()

    async def both_running() -> bool:
        return await run.running_pods("inflate") == 2

    e2e(run.wait_for("both inflate pods Running", both_running, 180))
    assert e2e(_replicas(run, md)) == 2
    e2e(run.clients[0].delete(DEPLOYMENTS, "inflate", ns))
    deleted = time.monotonic()

    async def gone() -> bool:
        return not await run.claims() and not await run.machines() and await _replicas(run, md) == 0

    e2e(run.wait_for("the NodeClaims, the Machines and the MD's replicas gone", gone, 120))
    elapsed = time.monotonic() - deleted
    print(f"scale to zero: {elapsed:.1f}s from deleting inflate to MD at 0")
    assert elapsed < 90.0
    disrupted = [
        line for line in _metrics(run).splitlines() if line.startswith("karpenter_nodeclaims_disrupted")
    ]
    assert f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="empty"}} 2.0' in disrupted
    assert "disrupting via empty delete: removing" in run.operators[0].log(400)


def test_exactly_the_empty_machine_is_deleted_and_the_others_keep_their_nodes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    md = "pool"
    apps = ("keep-a", "empty-b", "keep-c")
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {md: "c3-4"}),
            [_spread(article.deployment(app, ns, run.id, 1, "500m"), "one-per-node") for app in apps],
        )
    )
    run.start_operator()

    async def all_running() -> bool:
        return all([await run.running_pods(app) == 1 for app in apps])

    e2e(run.wait_for("three pods Running on three nodes", all_running, 180))
    placed = {app: e2e(_pods(run, app))[0]["spec"]["nodeName"] for app in apps}
    assert len(set(placed.values())) == 3
    machines = {m["status"]["nodeRef"]["name"]: c.name(m) for m in e2e(run.machines())}
    assert set(machines) == set(placed.values())
    emptied = machines[placed["empty-b"]]
    claims_before = e2e(run.claims())
    e2e(run.clients[0].delete(DEPLOYMENTS, "empty-b", ns))

    async def removed() -> bool:
        names = {c.name(m) for m in await run.machines()}
        return emptied not in names and await _replicas(run, md) == 2

    e2e(run.wait_for("the empty Machine removed and the MD at 2", removed, 150))
    left = {c.name(m): m for m in e2e(run.machines())}
    assert set(left) == {machines[placed["keep-a"]], machines[placed["keep-c"]]}
    assert all(not c.being_deleted(m) for m in left.values())
    for app in ("keep-a", "keep-c"):
        pods = e2e(_pods(run, app))
        assert [p["spec"]["nodeName"] for p in pods] == [placed[app]]
        assert pods[0]["status"]["phase"] == "Running"
    assert len(e2e(run.claims())) == 2
    # The decision left its Event on the NodeClaim it removed.
    [removed_claim] = [cl for cl in claims_before if cl["status"]["nodeName"] == placed["empty-b"]]
    reasons = {event["reason"]: event["message"] for event in e2e(list_events(run.clients[0], removed_claim))}
    assert reasons["DisruptionTerminating"].startswith("Disrupting NodeClaim: Empty/Delete")


class ReadyWatch:
    """Watches the pods of ``app`` and keeps the fewest Ready ones seen at any event."""

    def __init__(self, run: KapstanRun, app: str) -> None:
        self.informer = Informer(run.clients[0], PODS, namespace=run.namespace, label_selector=f"app={app}")
        self.informer.add_handler(self._on_event)
        self.fewest: int | None = None
        self.task: asyncio.Task[None] | None = None

    def _on_event(self, _: Event) -> None:
        if not self.informer.has_synced:
            return
        ready = sum(
            1
            for pod in self.informer.store.objects()
            if not pod["metadata"].get("deletionTimestamp")
            and any(
                cond.get("type") == "Ready" and cond.get("status") == "True"
                for cond in pod.get("status", {}).get("conditions") or []
            )
        )
        self.fewest = ready if self.fewest is None else min(self.fewest, ready)

    async def start(self) -> None:
        self.task = asyncio.ensure_future(self.informer.run())
        await self.informer.wait_synced()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


def _pdb(name: str, ns: str, app: str, min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


def _priced(manifests: list[dict[str, Any]], price: str) -> list[dict[str, Any]]:
    for obj in manifests:
        if obj["kind"] == "MachineDeployment":
            obj["metadata"]["annotations"]["kapstan.io/price-per-hour"] = price
    return manifests


UNDERUTILIZED = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "10s"}


def test_four_half_used_nodes_become_two_without_breaking_the_pdb(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    # "big" puts one 2-CPU pod on each of four c3-8 nodes; "web" then takes the other half of each.
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-8"}),
            [article.deployment("big", ns, run.id, 4, "2", anti_affinity=True)],
            disruption=UNDERUTILIZED,
        )
    )
    run.start_operator()

    async def big_running() -> bool:
        return await run.running_pods("big") == 4

    e2e(run.wait_for("four big pods Running", big_running, 180))
    e2e(apply(run.clients[0], [_pdb("web", ns, "web", 3), article.deployment("web", ns, run.id, 4, "1500m")]))

    async def web_running() -> bool:
        return await run.running_pods("web") == 4

    e2e(run.wait_for("four web pods Running", web_running, 120))
    assert len({p["spec"]["nodeName"] for p in e2e(_pods(run, "web"))}) == 4
    watch = ReadyWatch(run, "web")
    e2e(watch.start())
    e2e(run.clients[0].delete(DEPLOYMENTS, "big", ns))

    async def two_nodes() -> bool:
        claims = await run.claims()
        return len(claims) == 2 and len(await run.machines()) == 2 and await _replicas(run, "pool") == 2

    try:
        e2e(run.wait_for("two nodes left", two_nodes, 300))
        e2e(run.wait_for("four web pods Running", web_running, 60))
    finally:
        e2e(watch.stop())
    assert watch.fewest is not None and watch.fewest >= 3
    assert len({p["spec"]["nodeName"] for p in e2e(_pods(run, "web"))}) == 2
    exposition = _metrics(run)
    assert (
        f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="underutilized"}} 2.0'
        in exposition
    )
    assert "disrupting via underutilized delete: removing" in run.operators[0].log(600)


def test_one_large_node_is_replaced_by_two_cheaper_small_ones(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            _priced(article.standalone(ns, run.cluster, {"large": "c3-16"}), "0.5"),
            [article.deployment("app", ns, run.id, 2, "3")],
            disruption=UNDERUTILIZED,
        )
    )
    run.start_operator()

    async def running() -> bool:
        return await run.running_pods("app") == 2

    e2e(run.wait_for("both app pods Running on the c3-16", running, 180))
    [large] = e2e(run.claims())
    assert large["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "c3-16"
    # A cheaper flavor appears: two c3-8 at 0.2/h hold both pods for less than one c3-16 at 0.5/h.
    e2e(apply(run.clients[1], _priced(article.flavor_pool("small", ns, run.cluster, "c3-8"), "0.2")))

    async def replaced() -> bool:
        claims = await run.claims()
        flavors = sorted(c["metadata"]["labels"]["node.kubernetes.io/instance-type"] for c in claims)
        return flavors == ["c3-8", "c3-8"] and await run.running_pods("app") == 2

    e2e(run.wait_for("the c3-16 replaced by two c3-8", replaced, 300))

    async def settled() -> bool:
        claims = await run.claims()
        if any(
            DISRUPTION_REPLACEMENT_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims
        ):
            return False  # the command is complete once its replacements are ordinary NodeClaims
        return (
            await _replicas(run, "large") == 0
            and await _replicas(run, "small") == 2
            and len(await run.machines()) == 2
        )

    e2e(run.wait_for("the MDs at the Machines they should have", settled, 60))
    machines = e2e(run.machines())
    assert sorted(c.labels_of(m)[c.DEPLOYMENT_NAME_LABEL] for m in machines) == ["small", "small"]
    claims = {cl["status"]["nodeName"] for cl in e2e(run.claims())}
    assert {p["spec"]["nodeName"] for p in e2e(_pods(run, "app"))} == claims
    log = run.operators[0].log(600)
    assert "disrupting via underutilized replace: removing" in log
    assert "replacing with c3-8 (0.2/h), c3-8 (0.2/h) (0.4/h); saving 0.1/h" in log
    exposition = _metrics(run)
    assert (
        f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="underutilized"}} 1.0'
        in exposition
    )
    assert (
        f'karpenter_nodeclaims_created_total{{nodepool="{run.pool}",reason="underutilized"}} 2.0'
        in exposition
    )


def test_a_restart_in_the_middle_of_a_replace_leaves_no_orphan_and_finishes_or_rolls_back(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            _priced(article.standalone(ns, run.cluster, {"large": "c3-16"}), "0.5"),
            [article.deployment("app", ns, run.id, 2, "3")],
            disruption=UNDERUTILIZED,
        )
    )
    first = run.start_operator()

    async def running() -> bool:
        return await run.running_pods("app") == 2

    e2e(run.wait_for("both app pods Running on the c3-16", running, 180))
    [large] = e2e(run.claims())
    # The replacements boot 20 s after their Machines appear: the kill lands while the replace waits.
    small = article.flavor_pool("small", ns, run.cluster, "c3-8", boot_delay_seconds=20)
    e2e(apply(run.clients[1], _priced(small, "0.2")))

    async def replacing() -> bool:
        claims = await run.claims()
        recorded = any(
            DISRUPTION_COMMAND_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims
        )
        return recorded and len(claims) == 3 and len(await run.machines()) >= 2

    e2e(run.wait_for("the replace under way", replacing, 180))
    first.kill()
    run.start_operator()

    async def settled() -> bool:
        claims = await run.claims()
        if any(DISRUPTION_COMMAND_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims):
            return False
        if any(cl["metadata"].get("deletionTimestamp") for cl in claims):
            return False
        if any(
            DISRUPTION_REPLACEMENT_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims
        ):
            return False
        machines = await run.machines()
        return len(machines) == len(claims) and await run.running_pods("app") == 2

    e2e(run.wait_for("the command finished or rolled back", settled, 300))
    claims = {cl["metadata"]["name"]: cl for cl in e2e(run.claims())}
    flavors = sorted(cl["metadata"]["labels"]["node.kubernetes.io/instance-type"] for cl in claims.values())
    machines = e2e(run.machines())
    # No orphan: every Machine belongs to a live NodeClaim, and each NodeClaim has exactly one Machine.
    owners = [c.annotations_of(m).get("kapstan.io/nodeclaim") for m in machines]
    assert sorted(owners) == sorted(claims)  # type: ignore[type-var]
    for md in ("large", "small"):
        live = [m for m in machines if c.labels_of(m)[c.DEPLOYMENT_NAME_LABEL] == md]
        assert e2e(_replicas(run, md)) == len(live)
    if flavors == ["c3-16"]:  # rolled back: the large node is back in service, untainted
        assert large["metadata"]["name"] in claims
        node = e2e(run.clients[0].get(NODES, claims[large["metadata"]["name"]]["status"]["nodeName"]))
        assert all(t["key"] != "karpenter.sh/disrupted" for t in node["spec"].get("taints") or [])
    else:  # completed
        assert flavors == ["c3-8", "c3-8"]
        assert large["metadata"]["name"] not in claims
    assert all(
        DISRUPTION_REPLACEMENT_ANNOTATION not in (cl["metadata"].get("annotations") or {})
        for cl in claims.values()
    )


def test_a_do_not_disrupt_pod_keeps_its_node_and_the_other_node_goes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    held = article.deployment("held", ns, run.id, 1, "600m")
    held["spec"]["template"]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    # "held" and "filler" share one c3-4; "free" then needs a second one.
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-4"}),
            [held, article.deployment("filler", ns, run.id, 1, "1200m")],
            disruption={**UNDERUTILIZED, "budgets": [{"nodes": "100%"}]},
        )
    )
    run.start_operator()

    async def first_running() -> bool:
        return await run.running_pods("held") == 1 and await run.running_pods("filler") == 1

    e2e(run.wait_for("held and filler Running", first_running, 180))
    [held_pod] = e2e(_pods(run, "held"))
    e2e(apply(run.clients[0], [article.deployment("free", ns, run.id, 1, "600m")]))

    async def free_running() -> bool:
        return await run.running_pods("free") == 1

    e2e(run.wait_for("free Running", free_running, 120))
    [free_pod] = e2e(_pods(run, "free"))
    assert free_pod["spec"]["nodeName"] != held_pod["spec"]["nodeName"]
    # Both nodes now hold one small pod: either could go, but the held one's node may not.
    e2e(run.clients[0].delete(DEPLOYMENTS, "filler", ns))

    async def one_node() -> bool:
        return len(await run.claims()) == 1 and await run.running_pods("free") == 1

    e2e(run.wait_for("one node left", one_node, 180))
    [claim] = e2e(run.claims())
    assert claim["status"]["nodeName"] == held_pod["spec"]["nodeName"]
    [still] = e2e(_pods(run, "held"))
    assert still["metadata"]["uid"] == held_pod["metadata"]["uid"]
    assert [p["spec"]["nodeName"] for p in e2e(_pods(run, "free"))] == [held_pod["spec"]["nodeName"]]


def test_a_zero_budget_blocks_and_a_scheduled_one_only_inside_its_window(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    apps = ("stay", "leave")
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-4"}),
            [_spread(article.deployment(app, ns, run.id, 1, "500m"), "spread") for app in apps],
            disruption={
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "5s",
                "budgets": [{"nodes": "0"}],
            },
        )
    )
    run.start_operator()

    async def running() -> bool:
        return all([await run.running_pods(app) == 1 for app in apps])

    e2e(run.wait_for("both pods Running", running, 180))
    [leaving_pod] = e2e(_pods(run, "leave"))
    e2e(run.clients[0].delete(DEPLOYMENTS, "leave", ns))
    empty = next(
        cl for cl in e2e(run.claims()) if cl["status"]["nodeName"] == leaving_pod["spec"]["nodeName"]
    )

    async def consolidatable() -> bool:
        claim = await run.clients[0].get(NODECLAIMS, empty["metadata"]["name"])
        return any(
            cond["type"] == "Consolidatable" and cond["status"] == "True"
            for cond in claim["status"].get("conditions") or []
        )

    e2e(run.wait_for("the empty node Consolidatable", consolidatable, 60))
    # Consolidatable, yet a budget of 0 keeps it through more than a validation delay and two passes.
    e2e(asyncio.sleep(30))
    claims = e2e(run.claims())
    assert len(claims) == 2 and not any(cl["metadata"].get("deletionTimestamp") for cl in claims)
    pool_events = e2e(list_events(run.clients[0], e2e(run.clients[0].get(NODEPOOLS, run.pool))))
    assert [e["message"] for e in pool_events if e["reason"] == "DisruptionBlocked"] == [
        "No allowed disruptions for reason Empty: blocked by the budgets"
    ]

    # Now 0 only inside a one-minute window (the CRD takes whole minutes) that opened this minute, set
    # while at least 40 s of it remain: without the window the node would go within ~25 s.
    now = datetime.now(UTC)
    if now.second > 20:
        e2e(asyncio.sleep(61 - now.second))
        now = datetime.now(UTC)
    opened = now.replace(second=0, microsecond=0)
    closes = opened + timedelta(minutes=1)
    window = {"nodes": "0", "schedule": f"{opened.minute} {opened.hour} * * *", "duration": "1m"}
    e2e(run.clients[0].patch(NODEPOOLS, run.pool, {"spec": {"disruption": {"budgets": [window]}}}))
    gone_at: list[datetime] = []

    async def deleted() -> bool:
        claims = await run.claims()
        if any(
            cl["metadata"]["name"] == empty["metadata"]["name"]
            and not cl["metadata"].get("deletionTimestamp")
            for cl in claims
        ):
            return False
        gone_at.append(datetime.now(UTC))
        return True

    e2e(run.wait_for("the empty node deleted after the window", deleted, 120))
    assert gone_at[0] >= closes

    async def one_left() -> bool:
        return len(await run.claims()) == 1

    e2e(run.wait_for("the deleted NodeClaim gone", one_left, 60))
    [kept] = e2e(run.claims())
    [stay] = e2e(_pods(run, "stay"))
    assert kept["status"]["nodeName"] == stay["spec"]["nodeName"]


def test_an_expired_node_goes_and_a_blocked_drain_ends_at_the_termination_grace_period(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(run.setup(article.standalone(ns, run.cluster, {"pool": "c3-4"}), []))
    template = {"expireAfter": "1m", "terminationGracePeriod": "30s"}
    e2e(run.clients[0].patch(NODEPOOLS, run.pool, {"spec": {"template": {"spec": template}}}))
    # One replica under a PDB that allows no eviction, and one the drain must not evict at all
    # (do-not-disrupt): only the grace period can move them.
    held = article.deployment("held", ns, run.id, 1, "500m")
    held["spec"]["template"]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    app = article.deployment("app", ns, run.id, 1, "500m")
    e2e(apply(run.clients[0], [_pdb("app", ns, "app", 1), app, held]))
    run.start_operator()

    async def running() -> bool:
        return await run.running_pods("app") == 1 and await run.running_pods("held") == 1

    e2e(run.wait_for("the app and held pods Running", running, 180))
    [first] = e2e(run.claims())
    assert first["spec"]["expireAfter"] == "1m"
    [pod] = e2e(_pods(run, "app"))
    [held_pod] = e2e(_pods(run, "held"))

    async def expired() -> bool:
        claims = {cl["metadata"]["name"]: cl for cl in await run.claims()}
        return first["metadata"]["name"] not in claims or bool(
            claims[first["metadata"]["name"]]["metadata"].get("deletionTimestamp")
        )

    e2e(run.wait_for("the NodeClaim expired", expired, 120))

    async def moved() -> bool:
        for name, before in (("app", pod), ("held", held_pod)):
            pods = await _pods(run, name)
            if not (
                len(pods) == 1
                and pods[0]["metadata"]["uid"] != before["metadata"]["uid"]
                and pods[0].get("status", {}).get("phase") == "Running"
            ):
                return False
        return True

    e2e(run.wait_for("both pods Running on a new node after the grace period", moved, 180))

    async def first_gone() -> bool:
        return first["metadata"]["name"] not in {cl["metadata"]["name"] for cl in await run.claims()}

    e2e(run.wait_for("the expired NodeClaim and its Machine gone", first_gone, 60))
    assert first["metadata"]["annotations"]["kapstan.io/machine"].split("/")[1] not in {
        c.name(m) for m in e2e(run.machines())
    }
    assert f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="expired"}}' in _metrics(run)
    events = e2e(list_events(run.clients[0], pod))
    assert "EvictionBlocked" in {event["reason"] for event in events}
    assert "TerminationGracePeriodExpired" in {event["reason"] for event in events}
    held_events = {event["reason"] for event in e2e(list_events(run.clients[0], held_pod))}
    assert {"EvictionWaiting", "TerminationGracePeriodExpired"} <= held_events
    assert "EvictionBlocked" not in held_events  # never evicted: the PDB does not cover it
