"""Pod affinity and anti-affinity: Karpenter `scheduling/topology_test.go` ("Pod Affinity/Anti-Affinity")
and kube-scheduler's InterPodAffinity filter. A pod with required affinity needs a selected pod in the
same domain (or, when none exists anywhere, to be selected by its own term); a pod with required
anti-affinity must not share a domain with a selected pod, and a running pod's anti-affinity keeps
selected newcomers out of its domain too (the filter is symmetric for anti-affinity)."""

from __future__ import annotations

from karpenter_kit import (
    catalog,
    claim_of,
    existing,
    new_node_labels,
    placed,
    plan_for,
    pod,
    req,
    snap,
    spread,
    term,
    web,
)

from kapstan.scheduling.model import (
    ARCH,
    HOSTNAME,
    ZONE,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
)

S2 = {"security": "s2"}
SELECTS_S2 = LabelSelector(match_labels=(("security", "s2"),))


def on(
    key: str, selector: LabelSelector = SELECTS_S2, *namespaces: str, everywhere: bool = False
) -> PodAffinityTerm:
    return PodAffinityTerm(selector, key, namespaces or ("default",), everywhere)


def self_affine(name: str, key: str, cores: float = 0.5, **fields: object) -> Pod:
    return pod(name, cores, labels=S2, affinity=(on(key),), **fields)  # type: ignore[arg-type]


def test_empty_affinity_and_anti_affinity(engine: str) -> None:
    """Karpenter topology_test.go: "should schedule a pod with empty pod affinity and anti-affinity"."""
    assert placed(plan_for(snap([pod("p", affinity=(), anti_affinity=())]), engine)) == {"default/p"}


def test_affinity_on_hostname_joins_the_target(engine: str) -> None:
    """Karpenter topology_test.go: "should respect pod affinity (hostname)": among ten hostname-spread pods,
    the pod affine to `security: s2` lands on the node of the s2 pod."""
    spreading = [web(f"w{i}", spread=(spread(HOSTNAME),)) for i in range(10)]
    target, follower = pod("target", labels=S2), pod("follower", affinity=(on(HOSTNAME),))
    plan = plan_for(snap([*spreading, target, follower]), engine)
    assert claim_of(plan, "default/target") == claim_of(plan, "default/follower")


def test_affinity_on_arch_with_a_hostname_spread(engine: str) -> None:
    """Karpenter topology_test.go: "should respect pod affinity (arch)": same arch as the arm64 target, but
    another node because of the hostname spread."""
    tsc = (spread(HOSTNAME, selector=SELECTS_S2),)
    target = pod("target", labels=S2, spread=tsc, node_selector={ARCH: "arm64"})
    follower = pod("follower", labels=S2, spread=tsc, affinity=(on(ARCH),))
    plan = plan_for(snap([target, follower]), engine)
    assert new_node_labels(plan, "default/follower")[ARCH] == "arm64"
    assert claim_of(plan, "default/target") != claim_of(plan, "default/follower")


def test_self_affinity_on_hostname_packs_one_node(engine: str) -> None:
    """Karpenter topology_test.go: "should respect self pod affinity (hostname)"."""
    plan = plan_for(snap([self_affine(f"p{i}", HOSTNAME) for i in range(3)]), engine)
    assert len(plan.node_claims) == 1 and len(placed(plan)) == 3


def test_self_affinity_fills_the_first_domain_only(engine: str) -> None:
    """Karpenter topology_test.go: "should respect self pod affinity for first empty topology domain only
    (hostname)": the biggest node holds five of the ten 3-vCPU pods; the rest cannot start a second node,
    because a selected pod then exists elsewhere."""
    plan = plan_for(snap([self_affine(f"p{i}", HOSTNAME, 3) for i in range(10)]), engine)
    assert len(plan.node_claims) == 1 and len(placed(plan)) == 5 and len(plan.unschedulable) == 5


def test_self_affinity_cannot_escape_a_running_target(engine: str) -> None:
    """Karpenter topology_test.go: "should respect self pod affinity for first empty topology domain only
    (hostname/constrained zones)": an s2 pod already runs in zone 1 on a full node; pods that must go to
    zones 2 or 3 can never be on its node, so none schedule."""
    node = existing("n1", self_affine("first", HOSTNAME), labels={ZONE: "test-zone-1"})
    zones = (term(req(ZONE, "In", "test-zone-2", "test-zone-3")),)
    plan = plan_for(
        snap([self_affine(f"p{i}", HOSTNAME, required_terms=zones) for i in range(10)], nodes=(node,)), engine
    )
    assert placed(plan) == set()


def test_self_affinity_on_zone(engine: str) -> None:
    """Karpenter topology_test.go: "should respect self pod affinity (zone)"."""
    plan = plan_for(snap([self_affine(f"p{i}", ZONE) for i in range(3)]), engine)
    assert len({claim_of(plan, f"default/p{i}").zone for i in range(3)}) == 1


def test_self_affinity_on_zone_with_a_zone_requirement(engine: str) -> None:
    """Karpenter topology_test.go: "should respect self pod affinity (zone w/ constraint)"."""
    zone3 = (term(req(ZONE, "In", "test-zone-3")),)
    plan = plan_for(snap([self_affine(f"p{i}", ZONE, required_terms=zone3) for i in range(3)]), engine)
    assert {claim_of(plan, f"default/p{i}").zone for i in range(3)} == {"test-zone-3"}


def test_matching_affinities_with_incompatible_zones(engine: str) -> None:
    """Karpenter topology_test.go: "should allow two nodes to be created when two pods with matching
    affinities have incompatible selectors". kapstan deliberately differs: Karpenter places both (zone 2
    and zone 3), but once the first runs, kube-scheduler refuses the second, whose self-affinity exception
    no longer holds (a selected pod exists, in another zone). kapstan follows kube-scheduler: one placed."""
    s1 = LabelSelector(match_labels=(("security", "s1"),))
    pods = [
        pod(
            f"p{zone}",
            labels={"security": "s1"},
            affinity=(on(ZONE, s1),),
            required_terms=(term(req(ZONE, "In", f"test-zone-{zone}")),),
        )
        for zone in (2, 3)
    ]
    plan = plan_for(snap(pods), engine)
    assert len(placed(plan)) == 1 and len(plan.unschedulable) == 1


def test_preferred_affinity_to_a_missing_pod_is_relaxed(engine: str) -> None:
    """Karpenter topology_test.go: "should allow violation of preferred pod affinity"."""
    spreading = [web(f"w{i}", spread=(spread(HOSTNAME),)) for i in range(10)]
    hopeful = pod("hopeful", preferred_affinity=(WeightedPodAffinityTerm(50, on(HOSTNAME)),))
    assert "default/hopeful" in placed(plan_for(snap([*spreading, hopeful]), engine))


def test_preferred_anti_affinity_is_relaxed(engine: str) -> None:
    """Karpenter topology_test.go: "should allow violation of preferred pod anti-affinity": ten pods that
    would rather avoid each other's zone all schedule."""
    apart = (WeightedPodAffinityTerm(50, on(ZONE, LabelSelector(match_labels=(("app", "web"),)))),)
    pods = [web(f"w{i}", preferred_anti_affinity=apart) for i in range(10)]
    assert len(placed(plan_for(snap(pods), engine))) == 10


def test_hostname_anti_affinity_separates(engine: str) -> None:
    """Karpenter topology_test.go: "should separate nodes using simple pod anti-affinity on hostname" (in
    both orders, since the rule is symmetric)."""
    for pods in (
        [pod("a", labels=S2), pod("b", anti_affinity=(on(HOSTNAME),))],
        [pod("b", anti_affinity=(on(HOSTNAME),)), pod("a", labels=S2)],
    ):
        plan = plan_for(snap(pods), engine)
        assert claim_of(plan, "default/a") != claim_of(plan, "default/b")


def test_zone_anti_affinity_with_every_zone_taken(engine: str) -> None:
    """Karpenter topology_test.go: "should not violate pod anti-affinity on zone": an s2 pod pinned to each
    zone leaves no zone for the pod that avoids s2."""
    pinned = [pod(f"z{zone}", 1, labels=S2, node_selector={ZONE: f"test-zone-{zone}"}) for zone in (1, 2, 3)]
    plan = plan_for(snap([*pinned, pod("avoider", anti_affinity=(on(ZONE),))]), engine)
    assert placed(plan) == {"default/z1", "default/z2", "default/z3"}


def test_zone_anti_affinity_against_an_unpinned_pod(engine: str) -> None:
    """Karpenter topology_test.go: "should not violate pod anti-affinity on zone (other schedules first)".
    kapstan deliberately differs: Karpenter leaves the avoiding pod pending because the s2 pod's node could
    be in any zone; kapstan's plan fixes each new node's zone, so it puts the two in different zones,
    which kube-scheduler accepts (the validator checks it)."""
    plan = plan_for(snap([pod("target", 1, labels=S2), pod("avoider", anti_affinity=(on(ZONE),))]), engine)
    assert claim_of(plan, "default/target").zone != claim_of(plan, "default/avoider").zone


def test_arch_anti_affinity(engine: str) -> None:
    """Karpenter topology_test.go: "should not violate pod anti-affinity (arch)"."""
    tsc = (spread(HOSTNAME, selector=SELECTS_S2),)
    target = pod("target", labels=S2, spread=tsc, node_selector={ARCH: "arm64"})
    avoider = pod("avoider", labels=S2, spread=tsc, anti_affinity=(on(ARCH),))
    plan = plan_for(snap([target, avoider]), engine)
    assert new_node_labels(plan, "default/avoider")[ARCH] != "arm64"


def _zone_guards(anti: dict[str, object]) -> list[Pod]:
    return [pod(f"z{zone}", 1, node_selector={ZONE: f"test-zone-{zone}"}, **anti) for zone in (1, 2, 3)]  # type: ignore[arg-type]


def test_preferred_anti_affinity_of_others_is_not_binding(engine: str) -> None:
    """Karpenter topology_test.go: "should violate preferred pod anti-affinity on zone (inverse)": the
    guards only prefer to avoid s2, so the s2 pod schedules."""
    guards = _zone_guards({"preferred_anti_affinity": (WeightedPodAffinityTerm(10, on(ZONE)),)})
    assert "default/s2" in placed(plan_for(snap([*guards, pod("s2", labels=S2)]), engine))


def test_required_anti_affinity_of_others_is_binding(engine: str) -> None:
    """Karpenter topology_test.go: "should not violate pod anti-affinity on zone (inverse)": every zone holds
    a guard that refuses s2 pods, so the s2 pod, though it has no rule itself, cannot schedule."""
    guards = _zone_guards({"anti_affinity": (on(ZONE),)})
    plan = plan_for(snap([*guards, pod("s2", labels=S2)]), engine)
    assert "default/s2" in plan.unschedulable and len(placed(plan)) == 3


def test_running_pods_anti_affinity_is_binding(engine: str) -> None:
    """Karpenter topology_test.go: "should not violate pod anti-affinity on zone (inverse w/existing nodes)";
    kube-scheduler interpodaffinity filter_test.go "satisfies the PodAntiAffinity with existing pod but
    doesn't satisfy PodAntiAffinity symmetry with incoming pod"."""
    nodes = tuple(
        existing(
            f"n{z}", pod(f"guard{z}", anti_affinity=(on(ZONE),)), labels={ZONE: f"test-zone-{z}"}, room=4
        )
        for z in (1, 2, 3)
    )
    plan = plan_for(snap([pod("s2", labels=S2)], nodes=nodes), engine)
    assert placed(plan) == set()


def test_running_pods_preferred_anti_affinity_is_not_binding(engine: str) -> None:
    """Karpenter topology_test.go: "should violate preferred pod anti-affinity on zone (inverse w/existing
    nodes)"."""
    prefer = (WeightedPodAffinityTerm(10, on(ZONE)),)
    nodes = tuple(
        existing(f"n{z}", pod(f"guard{z}", preferred_anti_affinity=prefer), labels={ZONE: f"test-zone-{z}"})
        for z in (1, 2, 3)
    )
    assert placed(plan_for(snap([pod("s2", labels=S2)], nodes=nodes), engine)) == {"default/s2"}


def test_affinity_preference_conflicting_with_a_requirement(engine: str) -> None:
    """Karpenter topology_test.go: "should allow violation of a pod affinity preference with a conflicting
    required constraint": it prefers the target's zone but must avoid the target's zone."""
    target = pod("target", labels=S2, node_selector={ZONE: "test-zone-1"})
    torn = pod("torn", preferred_affinity=(WeightedPodAffinityTerm(50, on(ZONE)),), anti_affinity=(on(ZONE),))
    plan = plan_for(snap([target, torn]), engine)
    assert claim_of(plan, "default/torn").zone != "test-zone-1"


def test_self_anti_affinity_on_zone_one_per_zone(engine: str) -> None:
    """Karpenter topology_test.go: "should support pod anti-affinity with a zone topology": pods avoiding each
    other per zone: three schedule, one per zone, the rest wait."""
    pods = [pod(f"p{i}", labels=S2, anti_affinity=(on(ZONE),)) for i in range(5)]
    plan = plan_for(snap(pods), engine)
    assert sorted(claim.zone for claim in plan.node_claims) == ["test-zone-1", "test-zone-2", "test-zone-3"]
    assert len(plan.unschedulable) == 2


def test_affinity_to_a_pod_that_does_not_exist(engine: str) -> None:
    """Karpenter topology_test.go: "should not schedule pods with affinity to a non-existent pod"."""
    plan = plan_for(snap([pod("lonely", affinity=(on(ZONE),))]), engine)
    assert placed(plan) == set()


def test_zone_affinity_to_an_unconstrained_target(engine: str) -> None:
    """Karpenter topology_test.go: "should support pod affinity with zone topology (unconstrained target)"."""
    followers = [pod(f"f{i}", affinity=(on(ZONE),)) for i in range(10)]
    plan = plan_for(snap([pod("target", labels=S2), *followers]), engine)
    zone = claim_of(plan, "default/target").zone
    assert {claim_of(plan, f"default/f{i}").zone for i in range(10)} == {zone}


def test_zone_affinity_to_a_constrained_target(engine: str) -> None:
    """Karpenter topology_test.go: "should support pod affinity with zone topology (constrained target)"."""
    followers = [pod(f"f{i}", affinity=(on(ZONE),)) for i in range(10)]
    plan = plan_for(snap([pod("target", labels=S2, node_selector={ZONE: "test-zone-1"}), *followers]), engine)
    assert {claim_of(plan, f"default/f{i}").zone for i in range(10)} == {"test-zone-1"}


def test_a_chain_of_dependent_affinities(engine: str) -> None:
    """Karpenter topology_test.go: "should handle multiple dependent affinities": d follows c, c follows b,
    b follows a; all land on a's node."""
    chain = [pod("a", labels={"dep": "a"})]
    for prev, name in (("a", "b"), ("b", "c"), ("c", "d")):
        chain.append(
            pod(
                name,
                labels={"dep": name},
                affinity=(on(HOSTNAME, LabelSelector(match_labels=(("dep", prev),))),),
            )
        )
    plan = plan_for(snap(chain), engine)
    assert len(plan.node_claims) == 1 and len(placed(plan)) == 4


def test_a_dependency_on_an_unschedulable_pod(engine: str) -> None:
    """Karpenter topology_test.go: "should fail to schedule pods with unsatisfiable dependencies": b follows
    a, but a follows a pod that does not exist."""
    a = pod(
        "a", labels={"dep": "a"}, affinity=(on(HOSTNAME, LabelSelector(match_labels=(("dep", "none"),))),)
    )
    b = pod("b", affinity=(on(HOSTNAME, LabelSelector(match_labels=(("dep", "a"),))),))
    assert placed(plan_for(snap([a, b]), engine)) == set()


def test_affinity_looks_only_in_its_own_namespace(engine: str) -> None:
    """Karpenter topology_test.go: "should filter pod affinity topologies by namespace, no matching pods"."""
    target = pod("target", labels=S2, namespace="other")
    plan = plan_for(snap([target, pod("follower", affinity=(on(HOSTNAME),))]), engine)
    assert "default/follower" in plan.unschedulable


def test_affinity_with_a_namespace_list(engine: str) -> None:
    """Karpenter topology_test.go: "should filter pod affinity topologies by namespace, matching pods
    namespace list"."""
    target = pod("target", labels=S2, namespace="other")
    plan = plan_for(snap([target, pod("follower", affinity=(on(HOSTNAME, SELECTS_S2, "other"),))]), engine)
    assert claim_of(plan, "other/target") == claim_of(plan, "default/follower")


def test_affinity_with_an_empty_namespace_selector(engine: str) -> None:
    """Karpenter topology_test.go: "should filter pod affinity topologies by namespace, empty namespace
    selector" (every namespace)."""
    target = pod("target", labels=S2, namespace="other")
    plan = plan_for(snap([target, pod("follower", affinity=(on(HOSTNAME, everywhere=True),))]), engine)
    assert claim_of(plan, "other/target") == claim_of(plan, "default/follower")


def test_affinity_to_a_running_pod_reuses_its_node(engine: str) -> None:
    """kube-scheduler interpodaffinity filter_test.go "satisfies with requiredDuringSchedulingIgnoredDuring
    Execution in PodAffinity using In operator that matches the existing pod": the follower goes to the
    node that runs the target, which has room."""
    node = existing("n1", pod("target", labels=S2), labels={ZONE: "test-zone-2"}, room=2)
    plan = plan_for(
        snap([pod("follower", affinity=(on(HOSTNAME),))], nodes=(node,), flavors=catalog()), engine
    )
    assert plan.existing_nodes.get("n1") == ("default/follower",)
