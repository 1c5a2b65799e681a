"""A NodePool whose ClusterAPINodeClass is missing is left out of what the controllers plan and launch
from, and does not stop the other pools (found by the chaos suite: one such pool made every launch of the
cluster fail, since the catalog could not be built). On the fake API and a fake clock."""

from __future__ import annotations

import asyncio

from fake_cluster import world

from kapstan.api.wellknown import LAUNCHED
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim import Lifecycle, Timeouts
from kapstan.kube.kinds import NODEPOOLS
from kapstan.local import article


def test_a_pool_without_its_node_class_does_not_stop_the_launches_of_the_others() -> None:
    w = world()
    w.api.put(NODEPOOLS, article.node_pool("orphan", "absent", "unit"))
    name = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    lifecycle = Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, Timeouts(), clock=w.clock)
    asyncio.run(lifecycle.reconcile(w.claim_now(name)))
    assert cond.is_true(w.claim_now(name), LAUNCHED)
    simulation = asyncio.run(w.state.simulation_input())
    assert [pool.name for pool in simulation.snapshot.node_pools] == ["default"]
