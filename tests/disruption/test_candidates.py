"""What makes a node a candidate, what blocks it, and when it is consolidatable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from disruption_helpers import T0, claim, node, pdb, pod

from kapstan.controllers.disruption.candidates import blocker, candidate, consolidatable, price_of
from kapstan.controllers.pods import do_not_disrupt, reschedulable

START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def _candidate(pods: list[dict], pdbs: list[dict] | None = None, now: datetime = START) -> object:
    return candidate(
        claim(),
        node(),
        pods,
        pdbs or [],
        price=0.2,
        consolidate_after=timedelta(seconds=30),
        last_pod_event=None,
        now=now,
    )


def test_daemonset_static_and_finished_pods_do_not_make_a_node_busy() -> None:
    pods = [
        pod("agent", owner="DaemonSet"),
        pod("done", phase="Succeeded"),
        {
            **pod("static"),
            "metadata": {**pod("static")["metadata"], "annotations": {"kubernetes.io/config.mirror": "x"}},
        },
    ]
    assert not any(reschedulable(p) for p in pods)
    found = candidate(
        claim(), node(), pods, [], price=0.2, consolidate_after=timedelta(0), last_pod_event=None, now=START
    )
    assert found.empty and not found.blocked
    busy = candidate(
        claim(),
        node(),
        [*pods, pod("web")],
        [],
        price=0.2,
        consolidate_after=None,
        last_pod_event=None,
        now=START,
    )
    assert busy.pods == ("default/web",)


def test_do_not_disrupt_on_a_pod_the_node_or_the_claim_blocks() -> None:
    assert "do-not-disrupt" in blocker(
        claim(), node(), [pod("web", annotations={"karpenter.sh/do-not-disrupt": "true"})], [], START
    )
    assert blocker(
        claim(), node(annotations={"karpenter.sh/do-not-disrupt": "true"}), [], [], START
    ).startswith("Node")
    held = claim(annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert blocker(held, node(), [], [], START).startswith("NodeClaim")
    assert (
        blocker(
            claim(), node(), [pod("web", annotations={"karpenter.sh/do-not-disrupt": "false"})], [], START
        )
        == ""
    )
    # A DaemonSet pod's annotation does not hold the node: the pod is not moved anyway.
    agent = pod("agent", owner="DaemonSet", annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert blocker(claim(), node(), [agent], [], START) == ""


def test_a_do_not_disrupt_duration_protects_the_pod_for_that_long_after_it_started() -> None:
    protected = pod("batch", annotations={"karpenter.sh/do-not-disrupt": "10m"}, started=T0)
    assert do_not_disrupt(protected, START + timedelta(minutes=9, seconds=59))
    assert not do_not_disrupt(protected, START + timedelta(minutes=10))
    assert do_not_disrupt(pod("typo", annotations={"karpenter.sh/do-not-disrupt": "yes please"}), START)


def test_a_pdb_that_allows_no_eviction_blocks_and_one_that_allows_one_does_not() -> None:
    web = pod("web", labels={"app": "web"})
    assert "PodDisruptionBudget default/web-pdb" in blocker(
        claim(), node(), [web], [pdb("web-pdb", {"app": "web"}, 0)], START
    )
    assert blocker(claim(), node(), [web], [pdb("web-pdb", {"app": "web"}, 1)], START) == ""
    assert blocker(claim(), node(), [web], [pdb("other", {"app": "db"}, 0)], START) == ""
    assert (
        blocker(claim(), node(), [web], [pdb("elsewhere", {"app": "web"}, 0, namespace="prod")], START) == ""
    )


def test_consolidatable_after_consolidate_after_since_the_last_pod_event() -> None:
    after = timedelta(seconds=30)
    fresh = claim(initialized=T0)
    assert not consolidatable(fresh, None, after, START + timedelta(seconds=29))
    assert consolidatable(fresh, None, after, START + timedelta(seconds=30))
    event = START + timedelta(seconds=10)
    assert not consolidatable(fresh, event, after, START + timedelta(seconds=39))
    assert consolidatable(fresh, event, after, START + timedelta(seconds=40))
    # The recorded lastPodEventTime (a restart lost the memory) counts the same.
    recorded = claim(last_pod_event="2026-11-30T10:00:10Z")
    assert not consolidatable(recorded, None, after, START + timedelta(seconds=39))
    # Never, and not initialized, are never consolidatable.
    assert not consolidatable(fresh, None, None, START + timedelta(days=1))
    assert not consolidatable(claim(initialized=None), None, after, START + timedelta(days=1))


def test_the_price_is_the_one_bought_at_else_the_catalogs() -> None:
    assert (
        price_of(claim(annotations={"kapstan.io/price-per-hour": "0.5"}), {}, "kapstan.io/price-per-hour")
        == 0.5
    )
    assert price_of(claim(), {("c3-8", "nova"): 0.2}, "kapstan.io/price-per-hour") == 0.2
