"""Pods kube-scheduler has not tried yet are planned with the unschedulable ones (issue 14): a busy scheduler
marks a few new pods a second, and waiting for its verdict cut 1,000 pods into batches of a few dozen."""

from __future__ import annotations

import asyncio

from fake_cluster import world
from provisioner_kit import pending_pod, unschedulable

from kapstan.controllers.provisioner import Provisioner
from kapstan.kube.kinds import PODS
from kapstan.kube.store import Event


def _claims(provisioner: Provisioner) -> list[str]:
    """The cpu each claim of one batch was opened for."""
    made = asyncio.run(provisioner.provision())
    return sorted(claim["spec"]["resources"]["requests"]["cpu"] for claim in made)


def test_a_pod_the_scheduler_has_not_tried_is_planned_in_the_same_batch() -> None:
    w = world()  # c3-4: 2 CPU
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    w.api.put(PODS, unschedulable("marked", "1500m"))
    w.api.put(PODS, pending_pod("new", "1800m"))
    assert _claims(provisioner) == ["1500m", "1800m"]


def _opens_a_batch(provisioner: Provisioner, event: Event) -> bool:
    """Whether the pod informer's ``event`` opens a batch."""
    provisioner.batcher._trigger.clear()
    provisioner._on_pod(event)
    return provisioner.batcher._trigger.is_set()


def test_a_new_pod_opens_a_batch_and_the_schedulers_verdict_on_it_does_not_open_another() -> None:
    w = world()
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    new = pending_pod("new", "1")
    assert _opens_a_batch(provisioner, Event("ADDED", new)), "no waiting for the scheduler"
    marked = unschedulable("new", "1")
    assert not _opens_a_batch(provisioner, Event("MODIFIED", marked, new)), "nothing new to plan"


def test_gated_pods_and_other_schedulers_pods_wait_for_their_verdict() -> None:
    w = world()
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    waiting = [
        pending_pod("gated", "1", schedulingGates=[{"name": "example.com/quota"}]),
        pending_pod("custom", "1", schedulerName="my-scheduler"),
        pending_pod("tried", "1", conditions=[{"type": "PodScheduled", "status": "False"}]),
    ]
    for pod in waiting:
        w.api.put(PODS, pod)
        assert not _opens_a_batch(provisioner, Event("ADDED", pod)), pod["metadata"]["name"]
    assert _claims(provisioner) == []
