"""Node selectors, required and preferred node affinity, NodePool template labels and requirements, and
the well-known labels: Karpenter `scheduling/suite_test.go` "Custom Constraints" and kube-scheduler's
NodeAffinity filter. A pod may only land on a node whose labels satisfy its nodeSelector AND one of its
required terms; a new node's labels are the pool's template labels, the flavor's labels, the offering's
zone and capacity type, and one value of each pool requirement."""

from __future__ import annotations

import pytest
from karpenter_kit import (
    INTEGER,
    SPOT,
    ZONES,
    claim_of,
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
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    OS,
    ZONE,
    PreferredNodeTerm,
)

TEST_KEY = "test-key"
LABELLED = (pool(labels={TEST_KEY: "test-value"}),)
REQUIRED = (pool(requirements=(req(TEST_KEY, "In", "test-value"),)),)
TWO_VALUES = (pool(requirements=(req(TEST_KEY, "In", "test-value", "another-value"),)),)


def test_template_labels_reach_an_unconstrained_pods_node(engine: str) -> None:
    """Karpenter suite_test.go "NodePool with Labels": "should schedule unconstrained pods that don't have
    matching node selectors"."""
    plan = plan_for(snap([pod("p")], pools=LABELLED), engine)
    assert new_node_labels(plan, "default/p")[TEST_KEY] == "test-value"


def test_a_selector_conflicting_with_template_labels_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "NodePool with Labels": "should not schedule pods that have conflicting node
    selectors"."""
    plan = plan_for(snap([pod("p", node_selector={TEST_KEY: "different-value"})], pools=LABELLED), engine)
    assert plan.node_claims == () and TEST_KEY in plan.unschedulable["default/p"]


def test_a_selector_on_a_key_no_pool_defines_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "NodePool with Labels": "should not schedule pods that have node selectors
    with undefined key"."""
    plan = plan_for(snap([pod("p", node_selector={TEST_KEY: "test-value"})]), engine)
    assert plan.node_claims == () and "default/p" in plan.unschedulable


def test_a_requirement_matching_a_template_label(engine: str) -> None:
    """Karpenter suite_test.go "NodePool with Labels": "should schedule pods that have matching
    requirements" (In [test-value, another-value] against the label test-value)."""
    wanted = (term(req(TEST_KEY, "In", "test-value", "another-value")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)], pools=LABELLED), engine)
    assert new_node_labels(plan, "default/p")[TEST_KEY] == "test-value"


def test_a_requirement_conflicting_with_a_template_label(engine: str) -> None:
    """Karpenter suite_test.go "NodePool with Labels": "should not schedule pods that have conflicting
    requirements"."""
    wanted = (term(req(TEST_KEY, "In", "another-value")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)], pools=LABELLED), engine)
    assert placed(plan) == set()


def test_pool_zone_requirement_picks_the_zone(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should use NodePool constraints"."""
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-2"),)),)
    plan = plan_for(snap([pod("p")], pools=pools), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-2"


def test_zone_node_selector_within_the_pool_zones(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should use node selectors"."""
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-1", "test-zone-2"),)),)
    plan = plan_for(snap([pod("p", node_selector={ZONE: "test-zone-2"})], pools=pools), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-2"


def test_a_hostname_selector_gets_no_new_node(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should not schedule nodes with a hostname selector":
    a new node's hostname is not known in advance, so it cannot be the one the pod names."""
    plan = plan_for(snap([pod("p", node_selector={HOSTNAME: "red-node"})]), engine)
    assert plan.node_claims == () and "default/p" in plan.unschedulable


def test_an_unknown_zone_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should not schedule the pod if nodeselector unknown"."""
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-1"),)),)
    plan = plan_for(snap([pod("p", node_selector={ZONE: "unknown"})], pools=pools), engine)
    assert placed(plan) == set()


def test_a_zone_outside_the_pools_zones_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should not schedule if node selector outside of
    NodePool constraints"."""
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-1"),)),)
    plan = plan_for(snap([pod("p", node_selector={ZONE: "test-zone-2"})], pools=pools), engine)
    assert placed(plan) == set()


def test_zone_in(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule compatible requirements with
    Operator=In"."""
    plan = plan_for(snap([pod("p", required_terms=(term(req(ZONE, "In", "test-zone-3")),))]), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-3"


@pytest.mark.parametrize(
    ("operator", "bound", "value"),
    [("Gt", "8", "16"), ("Lt", "8", "2"), ("Gte", "16", "16"), ("Lte", "2", "2")],
)
def test_numeric_pool_requirement_on_a_flavor_label(
    engine: str, operator: str, bound: str, value: str
) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule compatible requirements with
    Operator=Gt" / "=Lt" / "=Gte" / "=Lte" (on the fake provider's integer label; the cheapest flavor in
    range wins)."""
    pools = (pool(requirements=(req(INTEGER, operator, bound),)),)
    plan = plan_for(snap([pod("p")], pools=pools), engine)
    assert new_node_labels(plan, "default/p")[INTEGER] == value


def test_zone_in_an_unknown_value_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should not schedule incompatible preferences and
    requirements with Operator=In"."""
    plan = plan_for(snap([pod("p", required_terms=(term(req(ZONE, "In", "unknown")),))]), engine)
    assert placed(plan) == set()


def test_zone_not_in_leaves_the_third_zone(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule compatible requirements with
    Operator=NotIn"."""
    wanted = (term(req(ZONE, "NotIn", "test-zone-1", "test-zone-2", "unknown")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)]), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-3"


def test_zone_not_in_every_zone_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should not schedule incompatible preferences and
    requirements with Operator=NotIn"."""
    wanted = (term(req(ZONE, "NotIn", *ZONES, "unknown")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)]), engine)
    assert placed(plan) == set()


def test_a_compatible_zone_preference_is_honoured(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule compatible preferences and requirements
    with Operator=In"."""
    required = (term(req(ZONE, "In", *ZONES, "unknown")),)
    preferred = (PreferredNodeTerm(1, term(req(ZONE, "In", "test-zone-2", "unknown"))),)
    plan = plan_for(snap([pod("p", required_terms=required, preferred_terms=preferred)]), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-2"


def test_an_impossible_zone_preference_is_relaxed(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule incompatible preferences and
    requirements with Operator=In"."""
    required = (term(req(ZONE, "In", *ZONES, "unknown")),)
    preferred = (PreferredNodeTerm(1, term(req(ZONE, "In", "unknown"))),)
    plan = plan_for(snap([pod("p", required_terms=required, preferred_terms=preferred)]), engine)
    assert placed(plan) == {"default/p"}


def test_a_compatible_not_in_preference_is_honoured(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule compatible preferences and requirements
    with Operator=NotIn"."""
    required = (term(req(ZONE, "In", *ZONES, "unknown")),)
    preferred = (PreferredNodeTerm(1, term(req(ZONE, "NotIn", "test-zone-1", "test-zone-3"))),)
    plan = plan_for(snap([pod("p", required_terms=required, preferred_terms=preferred)]), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-2"


def test_an_impossible_not_in_preference_is_relaxed(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule incompatible preferences and
    requirements with Operator=NotIn"."""
    required = (term(req(ZONE, "In", *ZONES, "unknown")),)
    preferred = (PreferredNodeTerm(1, term(req(ZONE, "NotIn", *ZONES))),)
    plan = plan_for(snap([pod("p", required_terms=required, preferred_terms=preferred)]), engine)
    assert placed(plan) == {"default/p"}


def test_selector_requirement_and_preference_together(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should schedule compatible node selectors, preferences
    and requirements"."""
    every = term(req(ZONE, "In", *ZONES))
    p = pod(
        "p",
        node_selector={ZONE: "test-zone-3"},
        required_terms=(every,),
        preferred_terms=(PreferredNodeTerm(1, every),),
    )
    plan = plan_for(snap([p]), engine)
    assert claim_of(plan, "default/p").zone == "test-zone-3"


def test_multidimensional_selector_requirements_and_preferences(engine: str) -> None:
    """Karpenter suite_test.go "Well Known Labels": "should combine multidimensional node selectors,
    preferences and requirements" (zone and instance type narrowed by all three)."""
    required = term(req(ZONE, "In", "test-zone-1", "test-zone-3"), req(INSTANCE_TYPE, "In", "default", "arm"))
    preferred = term(req(ZONE, "NotIn", "unknown"), req(INSTANCE_TYPE, "NotIn", "unknown"))
    p = pod(
        "p",
        node_selector={ZONE: "test-zone-3", INSTANCE_TYPE: "arm"},
        required_terms=(required,),
        preferred_terms=(PreferredNodeTerm(1, preferred),),
    )
    claim = claim_of(plan_for(snap([p]), engine), "default/p")
    assert (claim.zone, claim.instance_type) == ("test-zone-3", "arm")


@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io", "subdomain.kubernetes.io", "subdomain.k8s.io"])
def test_pool_requirement_labels_in_kubernetes_domains(engine: str, domain: str) -> None:
    """Karpenter suite_test.go "Constraints Validation": "should schedule pods that have node selectors with
    label in the kubernetes domains" and "... in subdomain from kubernetes domains": a pool requirement
    with one value becomes the node's label."""
    pools = (pool(requirements=(req(f"{domain}/test", "In", "test-value"),)),)
    plan = plan_for(snap([pod("p")], pools=pools), engine)
    assert new_node_labels(plan, "default/p")[f"{domain}/test"] == "test-value"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (ZONE, "test-zone-1"),
        (INSTANCE_TYPE, "default"),
        (ARCH, "arm64"),
        (OS, "linux"),
        (CAPACITY_TYPE, SPOT),
    ],
)
def test_well_known_label_selectors(engine: str, key: str, value: str) -> None:
    """Karpenter suite_test.go "Constraints Validation": "should schedule pods that have node selectors with
    label in wellknown label list" (zone, instance type, arch, os, capacity type)."""
    plan = plan_for(snap([pod("p", node_selector={key: value})]), engine)
    assert new_node_labels(plan, "default/p")[key] == value


def test_in_on_a_key_no_pool_defines_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should not schedule pods that have node selectors with In
    operator and undefined key"."""
    plan = plan_for(snap([pod("p", required_terms=(term(req(TEST_KEY, "In", "test-value")),))]), engine)
    assert placed(plan) == set()


def test_not_in_on_a_key_no_pool_defines_schedules(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule pods that have node selectors with NotIn
    operator and undefined key"."""
    plan = plan_for(snap([pod("p", required_terms=(term(req(TEST_KEY, "NotIn", "test-value")),))]), engine)
    assert new_node_labels(plan, "default/p").get(TEST_KEY) != "test-value"


def test_exists_on_a_key_no_pool_defines_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should not schedule pods that have node selectors with
    Exists operator and undefined key"."""
    plan = plan_for(snap([pod("p", required_terms=(term(req(TEST_KEY, "Exists")),))]), engine)
    assert placed(plan) == set()


def test_does_not_exist_on_a_key_no_pool_defines_schedules(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule pods that with DoesNotExists operator and
    undefined key"."""
    plan = plan_for(snap([pod("p", required_terms=(term(req(TEST_KEY, "DoesNotExist")),))]), engine)
    assert TEST_KEY not in new_node_labels(plan, "default/p")


def test_a_pool_requirement_labels_an_unconstrained_pods_node(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule unconstrained pods that don't have
    matching node selectors" (requirement In [test-value] on a key only the pool defines)."""
    plan = plan_for(snap([pod("p")], pools=REQUIRED), engine)
    assert new_node_labels(plan, "default/p")[TEST_KEY] == "test-value"


def test_in_matching_a_pool_requirement(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule pods that have node selectors with
    matching value and In operator"."""
    plan = plan_for(
        snap([pod("p", required_terms=(term(req(TEST_KEY, "In", "test-value")),))], pools=REQUIRED), engine
    )
    assert new_node_labels(plan, "default/p")[TEST_KEY] == "test-value"


def test_not_in_the_only_value_of_a_pool_requirement_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should not schedule pods that have node selectors with
    matching value and NotIn operator"."""
    wanted = (term(req(TEST_KEY, "NotIn", "test-value")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)], pools=REQUIRED), engine)
    assert placed(plan) == set()


def test_exists_on_a_key_a_pool_requirement_defines(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule the pod with Exists operator and defined
    key"."""
    plan = plan_for(snap([pod("p", required_terms=(term(req(TEST_KEY, "Exists")),))], pools=REQUIRED), engine)
    assert new_node_labels(plan, "default/p")[TEST_KEY] == "test-value"


def test_does_not_exist_on_a_key_a_pool_requirement_defines_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should not schedule the pod with DoesNotExists operator
    and defined key"."""
    wanted = (term(req(TEST_KEY, "DoesNotExist")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)], pools=REQUIRED), engine)
    assert placed(plan) == set()


def test_in_another_value_than_the_pool_requirement_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should not schedule pods that have node selectors with
    different value and In operator"."""
    wanted = (term(req(TEST_KEY, "In", "another-value")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)], pools=REQUIRED), engine)
    assert placed(plan) == set()


def test_not_in_another_value_than_the_pool_requirement(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule pods that have node selectors with
    different value and NotIn operator"."""
    wanted = (term(req(TEST_KEY, "NotIn", "another-value")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)], pools=REQUIRED), engine)
    assert new_node_labels(plan, "default/p")[TEST_KEY] == "test-value"


def test_compatible_requirements_share_a_node(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule compatible pods to the same node" (In
    [test-value] and NotIn [another-value] meet on test-value)."""
    pods = [
        pod("a", required_terms=(term(req(TEST_KEY, "In", "test-value")),)),
        pod("b", required_terms=(term(req(TEST_KEY, "NotIn", "another-value")),)),
    ]
    plan = plan_for(snap(pods, pools=TWO_VALUES), engine)
    assert len(plan.node_claims) == 1
    assert plan.node_claims[0].labels[TEST_KEY] == "test-value"


def test_incompatible_requirements_take_two_nodes(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule incompatible pods to the different node"."""
    pods = [
        pod("a", required_terms=(term(req(TEST_KEY, "In", "test-value")),)),
        pod("b", required_terms=(term(req(TEST_KEY, "In", "another-value")),)),
    ]
    plan = plan_for(snap(pods, pools=TWO_VALUES), engine)
    assert new_node_labels(plan, "default/a")[TEST_KEY] == "test-value"
    assert new_node_labels(plan, "default/b")[TEST_KEY] == "another-value"
    assert claim_of(plan, "default/a") is not claim_of(plan, "default/b")


def test_exists_does_not_widen_an_impossible_in(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "Exists operator should not overwrite the existing value"."""
    wanted = (term(req(ZONE, "In", "non-existent-zone"), req(ZONE, "Exists")),)
    plan = plan_for(snap([pod("p", required_terms=wanted)]), engine)
    assert placed(plan) == set()


def test_required_terms_are_ored(engine: str) -> None:
    """kube-scheduler nodeaffinity filter (node_affinity_test.go, "Pod with multiple NodeSelectorTerms ORed
    in affinity, matches the node's labels and will schedule onto the node"): one term suffices."""
    terms = (term(req(ARCH, "In", "s390x")), term(req(INSTANCE_TYPE, "In", "large")))
    plan = plan_for(snap([pod("p", required_terms=terms)]), engine)
    assert claim_of(plan, "default/p").instance_type == "large"


def test_selector_and_affinity_must_both_hold(engine: str) -> None:
    """kube-scheduler nodeaffinity filter (node_affinity_test.go, "Pod with an Affinity and a PodSpec.
    NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node")."""
    p = pod("p", node_selector={ARCH: "arm64"}, required_terms=(term(req(OS, "In", "windows")),))
    plan = plan_for(snap([p]), engine)
    assert placed(plan) == set()


def test_exists_needs_a_flavor_with_the_label(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule the pod with Exists operator and defined
    key", with the key on one flavor only: the pod must get that flavor, not a cheaper one without it."""
    wanted = (term(req("example.com/gpu-vendor", "Exists")),)
    assert (
        claim_of(plan_for(snap([pod("p", required_terms=wanted)]), engine), "default/p").instance_type
        == "gpu"
    )


def test_a_two_value_pool_requirement_puts_one_of_them_on_the_node(engine: str) -> None:
    """Karpenter suite_test.go "Scheduling Logic": "should schedule unconstrained pods that don't have
    matching node selectors", with two allowed values: the node carries one of them."""
    assert new_node_labels(plan_for(snap([pod("p")], pools=TWO_VALUES), engine), "default/p")[TEST_KEY] in {
        "test-value",
        "another-value",
    }
