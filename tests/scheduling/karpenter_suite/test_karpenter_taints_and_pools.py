"""Taints and tolerations, several NodePools (selection by label, weights, PreferNoSchedule) and the
relaxation of preferences: Karpenter `provisioning/suite_test.go` ("Taints", "Multiple NodePools",
"Preferential Fallback"), `scheduling/topology_test.go` (its taint cases), `scheduling/suite_test.go`
("Preferential Fallback") and kube-scheduler's TaintToleration filter (taint_toleration_test.go)."""

from __future__ import annotations

import pytest
from karpenter_kit import (
    catalog,
    claim_of,
    flavor,
    new_node_labels,
    placed,
    plan_for,
    pod,
    pool,
    req,
    snap,
    term,
)

from kapstan.scheduling.model import (
    INSTANCE_TYPE,
    NODEPOOL,
    ZONE,
    NodePool,
    PreferredNodeTerm,
    Taint,
    Toleration,
)

DEDICATED = Taint("dedicated", "NoSchedule", "user1")


def tainted(*taints: Taint) -> tuple[NodePool, ...]:
    return (pool(taints=taints),)


def test_no_toleration_no_node_from_a_tainted_pool(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "A pod having no tolerations can't be scheduled onto a node
    with nonempty taints"; Karpenter suite_test.go "Taints": the tolerating pod is the only one provisioned."""
    plan = plan_for(snap([pod("p")], pools=tainted(DEDICATED)), engine)
    assert plan.node_claims == () and "dedicated=user1:NoSchedule" in plan.unschedulable["default/p"]


def test_equal_toleration_of_the_dedicated_taint(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "A pod which can be scheduled on a dedicated node assigned to
    user1 with effect NoSchedule"."""
    p = pod("p", tolerations=(Toleration("dedicated", "Equal", "user1", "NoSchedule"),))
    assert placed(plan_for(snap([p], pools=tainted(DEDICATED)), engine)) == {"default/p"}


def test_toleration_of_another_value_is_not_enough(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "A pod which can't be scheduled on a dedicated node assigned
    to user2 with effect NoSchedule"."""
    p = pod("p", tolerations=(Toleration("dedicated", "Equal", "user2", "NoSchedule"),))
    assert placed(plan_for(snap([p], pools=tainted(DEDICATED)), engine)) == set()


def test_exists_toleration(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "A pod can be scheduled onto the node, with a toleration uses
    operator Exists that tolerates the taints on the node"; Karpenter topology_test.go "should schedule pods
    that tolerate NodePool constraints"."""
    p = pod("p", tolerations=(Toleration("dedicated", "Exists", effect="NoSchedule"),))
    assert placed(plan_for(snap([p], pools=tainted(DEDICATED)), engine)) == {"default/p"}


def test_every_taint_must_be_tolerated(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "A pod has multiple tolerations, node has multiple taints,
    all the taints are tolerated, pod can be scheduled onto the node" and, with one missing, cannot."""
    taints = (DEDICATED, Taint("foo", "NoSchedule", "bar"))
    both = (Toleration("dedicated", "Equal", "user1", "NoSchedule"), Toleration("foo", "Exists"))
    plan = plan_for(
        snap([pod("both", tolerations=both), pod("one", tolerations=both[:1])], pools=tainted(*taints)),
        engine,
    )
    assert placed(plan) == {"default/both"}


def test_a_toleration_of_another_effect_does_not_match(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "A pod has a toleration that keys and values match the taint
    on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node"."""
    p = pod("p", tolerations=(Toleration("dedicated", "Equal", "user1", "NoExecute"),))
    assert placed(plan_for(snap([p], pools=tainted(DEDICATED)), engine)) == set()


def test_a_toleration_with_no_effect_matches_every_effect(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "The pod has a toleration that keys and values match the
    taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be
    scheduled onto the node"."""
    p = pod("p", tolerations=(Toleration("dedicated", "Equal", "user1"),))
    assert placed(plan_for(snap([p], pools=tainted(DEDICATED)), engine)) == {"default/p"}


def test_prefer_no_schedule_does_not_filter(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go: "The pod has no toleration, but the effect of taint on node is
    PreferNoSchedule. Pod can be scheduled onto the node" (the filter ignores PreferNoSchedule)."""
    plan = plan_for(snap([pod("p")], pools=tainted(Taint("foo", "PreferNoSchedule", "bar"))), engine)
    assert placed(plan) == {"default/p"}


def test_no_execute_taint_needs_a_toleration(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go (NoExecute taints filter like NoSchedule ones); Karpenter
    suite_test.go "should schedule pods that tolerate taints" (NoExecute entry)."""
    taint = Taint("evict", "NoExecute", "yes")
    tolerant = pod("t", tolerations=(Toleration("evict", "Equal", "yes", "NoExecute"),))
    plan = plan_for(snap([tolerant, pod("plain")], pools=tainted(taint)), engine)
    assert placed(plan) == {"default/t"}


def test_a_startup_taint_does_not_block_placement(engine: str) -> None:
    """Karpenter topology_test.go: "should provision nodes with taints and schedule pods if the taint is only
    a startup taint"."""
    pools = (pool(startup_taints=(Taint("ignore-me", "NoSchedule", "nothing-to-see-here"),)),)
    assert placed(plan_for(snap([pod("p")], pools=pools), engine)) == {"default/p"}


def test_a_flavor_taint_needs_a_toleration(engine: str) -> None:
    """Karpenter instance_selection_test.go (an instance type's own taints, e.g. GPU flavors, are part of the
    node): a pod that does not tolerate them goes to another flavor."""
    reserved = flavor("reserved", 2, 4, 0.5, taints=(Taint("reserved", "NoSchedule"),))
    flavors = (*catalog(), reserved)
    plain = plan_for(snap([pod("plain")], flavors=flavors), engine)
    assert claim_of(plain, "default/plain").instance_type == "small"
    tolerant = plan_for(
        snap([pod("t", tolerations=(Toleration("reserved", "Exists"),))], flavors=flavors), engine
    )
    assert claim_of(tolerant, "default/t").instance_type == "reserved"


def test_an_explicitly_selected_pool(engine: str) -> None:
    """Karpenter suite_test.go "Multiple NodePools": "should schedule to an explicitly selected NodePool"."""
    pools = (pool("a"), pool("b"))
    plan = plan_for(snap([pod("p", node_selector={NODEPOOL: "b"})], pools=pools), engine)
    assert claim_of(plan, "default/p").node_pool == "b"


def test_a_pool_chosen_by_its_template_labels(engine: str) -> None:
    """Karpenter suite_test.go "Multiple NodePools": "should schedule to a NodePool by labels"."""
    pools = (pool("a"), pool("b", labels={"foo": "bar"}))
    plan = plan_for(snap([pod("p", node_selector={"foo": "bar"})], pools=pools), engine)
    assert claim_of(plan, "default/p").node_pool == "b"


def test_a_heavier_pool_without_the_label_is_not_used(engine: str) -> None:
    """Karpenter suite_test.go "Multiple NodePools": "should schedule to a NodePool by labels", with a
    heavier pool that lacks the label: kube-scheduler would never bind the pod to that pool's node."""
    pools = (pool("b", labels={"foo": "bar"}), pool("c", weight=50))
    plan = plan_for(snap([pod("p", node_selector={"foo": "bar"})], pools=pools), engine)
    assert claim_of(plan, "default/p").node_pool == "b"


def test_a_value_no_pool_labels_is_refused_with_several_pools(engine: str) -> None:
    """Karpenter suite_test.go "NodePool with Labels": "should not schedule pods that have conflicting node
    selectors", with a second pool that has no such label at all."""
    pools = (pool("b", labels={"foo": "bar"}), pool("c", weight=50))
    plan = plan_for(snap([pod("p", node_selector={"foo": "other"})], pools=pools), engine)
    assert plan.node_claims == () and "default/p" in plan.unschedulable


def test_prefer_no_schedule_pool_is_avoided_when_another_matches(engine: str) -> None:
    """Karpenter suite_test.go "Multiple NodePools": "should not match NodePool with PreferNoSchedule taint
    when other NodePool match"."""
    pools = (pool("soft", taints=(Taint("foo", "PreferNoSchedule", "bar"),), weight=10), pool("plain"))
    plan = plan_for(snap([pod("p")], pools=pools), engine)
    assert claim_of(plan, "default/p").node_pool == "plain"


def test_the_heaviest_pool_always_wins(engine: str) -> None:
    """Karpenter suite_test.go "Weighted NodePools": "should schedule to the nodepool with the highest
    priority always"."""
    pools = (pool("none"), pool("twenty", weight=20), pool("hundred", weight=100))
    plan = plan_for(snap([pod(f"p{i}") for i in range(3)], pools=pools), engine)
    assert {claim.node_pool for claim in plan.node_claims} == {"hundred"}
    assert len(placed(plan)) == 3


def test_an_explicit_pool_beats_heavier_ones(engine: str) -> None:
    """Karpenter suite_test.go "Weighted NodePools": "should schedule to explicitly selected nodepool even if
    other nodePools are higher priority"."""
    pools = (pool("target"), pool("twenty", weight=20), pool("hundred", weight=100))
    plan = plan_for(snap([pod("p", node_selector={NODEPOOL: "target"})], pools=pools), engine)
    assert claim_of(plan, "default/p").node_pool == "target"


def test_the_final_required_term_is_never_relaxed(engine: str) -> None:
    """Karpenter suite_test.go "Preferential Fallback / Required": "should not relax the final term"."""
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-1"),)),)
    plan = plan_for(snap([pod("p", required_terms=(term(req(ZONE, "In", "invalid")),))], pools=pools), engine)
    assert placed(plan) == set()


def test_required_terms_fall_through_to_the_first_that_works(engine: str) -> None:
    """Karpenter suite_test.go "Preferential Fallback / Required": "should relax multiple terms" (two
    impossible terms, then test-zone-1, then test-zone-2 which is never needed). Karpenter drops terms in
    order and takes the first that fits; kube-scheduler accepts any term. Both put the pod in zone 1 here
    because kapstan also tries the terms in order."""
    terms = tuple(
        term(req(ZONE, "In", zone)) for zone in ("invalid", "invalid", "test-zone-1", "test-zone-2")
    )
    plan = plan_for(snap([pod("p", required_terms=terms)]), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-1"


def test_every_impossible_preference_is_relaxed(engine: str) -> None:
    """Karpenter suite_test.go "Preferential Fallback / Preferred": "should relax all terms" (zone and
    instance type both invalid)."""
    prefs = (
        PreferredNodeTerm(1, term(req(ZONE, "In", "invalid"))),
        PreferredNodeTerm(1, term(req(INSTANCE_TYPE, "In", "invalid"))),
    )
    assert placed(plan_for(snap([pod("p", preferred_terms=prefs)]), engine)) == {"default/p"}


def test_relaxation_keeps_the_lighter_preference_that_works(engine: str) -> None:
    """Karpenter suite_test.go "Preferential Fallback / Preferred": "should relax to use lighter weights":
    weight 100 is impossible, weight 50 (zone 2) holds, weight 1 (zone 1) is never needed."""
    prefs = (
        PreferredNodeTerm(100, term(req(INSTANCE_TYPE, "In", "test-zone-3"))),
        PreferredNodeTerm(50, term(req(ZONE, "In", "test-zone-2"))),
        PreferredNodeTerm(1, term(req(ZONE, "In", "test-zone-1"))),
    )
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-1", "test-zone-2"),)),)
    plan = plan_for(snap([pod("p", preferred_terms=prefs)], pools=pools), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-2"


def test_prefer_no_schedule_tolerated_after_affinity_preferences_relax(engine: str) -> None:
    """Karpenter suite_test.go "Preferential Fallback": "should tolerate PreferNoSchedule taint only after
    trying to relax Affinity terms": the only pool carries a PreferNoSchedule taint; the pod still gets a
    node from it."""
    prefs = (
        PreferredNodeTerm(1, term(req(ZONE, "In", "invalid"))),
        PreferredNodeTerm(1, term(req(INSTANCE_TYPE, "In", "invalid"))),
    )
    pools = tainted(Taint("foo", "PreferNoSchedule", "bar"))
    plan = plan_for(snap([pod("p", preferred_terms=prefs)], pools=pools), engine)
    assert claim_of(plan, "default/p").node_pool == "default"


@pytest.mark.parametrize("key", [ZONE, "kubernetes.io/hostname"])
def test_an_unmet_node_preference_does_not_split_pods(engine: str, key: str) -> None:
    """Karpenter suite_test.go "Preferential Fallback": "should ignore node preferredDuringScheduling
    IgnoredDuringExecution affinity" (zone and hostname entries): a pod whose preference cannot be met still
    shares the node of an unconstrained pod."""
    first = pod("first", 1, labels={"app": "foo"})
    picky = pod(
        "picky",
        0.5,
        labels={"app": "baz"},
        preferred_terms=(PreferredNodeTerm(1, term(req(key, "In", "value-1"))),),
    )
    plan = plan_for(snap([first, picky]), engine)
    assert claim_of(plan, "default/first") == claim_of(plan, "default/picky")
    assert new_node_labels(plan, "default/first")[NODEPOOL] == "default"
