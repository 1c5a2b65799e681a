"""Hypothesis strategies for random scheduling snapshots covering every constraint family.

Shared by the property tests and (later) the Rust-versus-Python differential tests, so both explore
the same space: several NodePools with weights, limits, requirements and taints; priced flavors in
several zones; existing nodes with pods; DaemonSets; pods with every kind of constraint.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from builders import GI, MI, make_flavor, make_node, make_pod
from kapstan.scheduling.model import (
    HOSTNAME,
    INSTANCE_TYPE,
    ZONE,
    DaemonSet,
    HostPort,
    InstanceType,
    LabelSelector,
    Node,
    NodePool,
    NodeSelectorRequirement,
    Pod,
    PodAffinityTerm,
    PreferredNodeTerm,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

ZONES = ("z1", "z2", "z3")
APPS = ("a", "b", "c")
TOPOLOGY_KEYS = (HOSTNAME, ZONE)


@st.composite
def flavors(draw: st.DrawFn) -> tuple[InstanceType, ...]:
    count = draw(st.integers(1, 5))
    out = []
    for i in range(count):
        cores = draw(st.sampled_from((1, 2, 4, 8, 16)))
        memory = cores * draw(st.sampled_from((1, 2, 4))) * GI
        zones = tuple(sorted(draw(st.sets(st.sampled_from(ZONES), min_size=1, max_size=3))))
        price = draw(st.none() | st.floats(0.05, 20, allow_nan=False).map(lambda p: round(p, 3)))
        family = draw(st.sampled_from(("general", "compute")))
        out.append(
            make_flavor(f"f{i}-{cores}", cores, memory, price=price, zones=zones, labels={"family": family})
        )
    return tuple(out)


selectors = st.sampled_from(APPS).map(lambda app: LabelSelector(match_labels=(("app", app),)))
affinity_terms = st.builds(PodAffinityTerm, selectors, st.sampled_from(TOPOLOGY_KEYS), st.just(("default",)))
spread_constraints = st.builds(
    TopologySpreadConstraint,
    st.integers(1, 2),
    st.sampled_from(TOPOLOGY_KEYS),
    st.sampled_from(("DoNotSchedule", "ScheduleAnyway")),
    selectors,
    min_domains=st.integers(1, 3),
    node_affinity_policy=st.sampled_from(("Honor", "Ignore")),
    node_taints_policy=st.sampled_from(("Ignore", "Honor")),
)
dedicated = Taint("dedicated", "NoSchedule", "x")
tolerate_dedicated = Toleration("dedicated", "Exists")


@st.composite
def pods(draw: st.DrawFn, prefix: str, count: int) -> list[Pod]:
    out = []
    for i in range(count):
        app = draw(st.sampled_from(APPS))
        fields: dict[str, object] = {}
        if draw(st.booleans()):
            fields["anti_affinity"] = tuple(draw(st.lists(affinity_terms, max_size=1)))
        if draw(st.integers(0, 4)) == 0:
            fields["affinity"] = tuple(draw(st.lists(affinity_terms, max_size=1)))
        if draw(st.booleans()):
            fields["spread"] = tuple(draw(st.lists(spread_constraints, max_size=2)))
        if draw(st.integers(0, 3)) == 0:
            fields["node_selector"] = {"family": draw(st.sampled_from(("general", "compute")))}
        if draw(st.integers(0, 3)) == 0:
            zone_term = (NodeSelectorRequirement(ZONE, "In", (draw(st.sampled_from(ZONES)),)),)
            fields["preferred_terms"] = (PreferredNodeTerm(10, zone_term),)
        if draw(st.integers(0, 4)) == 0:
            other = draw(affinity_terms)
            fields["preferred_anti_affinity"] = (WeightedPodAffinityTerm(5, other),)
        if draw(st.integers(0, 4)) == 0:
            fields["required_terms"] = (
                (NodeSelectorRequirement(INSTANCE_TYPE, "NotIn", ("f0-1",)),),
                (NodeSelectorRequirement(ZONE, "In", ("z1",)),),
            )
        if draw(st.integers(0, 5)) == 0:
            # Template labels and requirement-only keys of some pools only (issue 12 items 1, 2).
            fields["node_selector"] = {
                **fields.get("node_selector", {}),  # type: ignore[dict-item]
                **draw(
                    st.sampled_from(({"team": "blue"}, {"tier": "silver"}, {"team": "red", "tier": "gold"}))
                ),
            }
        if draw(st.integers(0, 3)) == 0:
            fields["tolerations"] = (tolerate_dedicated,)
        if draw(st.integers(0, 5)) == 0:
            fields["host_ports"] = (HostPort(draw(st.sampled_from((80, 443)))),)
        cores = draw(st.sampled_from((0.1, 0.25, 0.5, 1, 1.5, 3)))
        memory = draw(st.sampled_from((100, 256, 512, 1024, 4096))) * MI
        out.append(make_pod(f"{prefix}{i}", cores, memory, labels={"app": app}, **fields))
    return out


@st.composite
def node_pools(draw: st.DrawFn) -> tuple[NodePool, ...]:
    count = draw(st.integers(1, 3))
    out = []
    for i in range(count):
        fields: dict[str, object] = {"weight": draw(st.integers(0, 3))}
        if draw(st.booleans()):
            fields["limits"] = {draw(st.sampled_from(("cpu", "nodes"))): draw(st.integers(2, 24)) * 1000}
        if draw(st.integers(0, 2)) == 0:
            fields["requirements"] = (
                NodeSelectorRequirement("family", "In", (draw(st.sampled_from(("general", "compute"))),)),
            )
        if draw(st.integers(0, 3)) == 0:
            fields["taints"] = (dedicated,)
        if draw(st.integers(0, 3)) == 0:
            fields["requirements"] = (
                NodeSelectorRequirement(
                    ZONE, "In", tuple(sorted(draw(st.sets(st.sampled_from(ZONES), min_size=1))))
                ),
            )
        if draw(st.integers(0, 3)) == 0:
            fields["labels"] = {"team": draw(st.sampled_from(("blue", "red")))}
        if draw(st.integers(0, 3)) == 0:
            # A key no flavor defines: claims of this pool carry one value of it (issue 12 item 2).
            tier = draw(st.sampled_from((("In", ("gold", "silver")), ("Exists", ()), ("NotIn", ("gold",)))))
            fields["requirements"] = (*fields.get("requirements", ()), NodeSelectorRequirement("tier", *tier))  # type: ignore[arg-type]
        out.append(NodePool(name=f"pool{i}", **fields))  # type: ignore[arg-type]
    return tuple(out)


@st.composite
def snapshots(draw: st.DrawFn, max_pods: int = 25) -> Snapshot:
    catalog = draw(flavors())
    nodes: list[Node] = []
    for i in range(draw(st.integers(0, 3))):
        flavor = draw(st.sampled_from(catalog))
        bound = tuple(draw(pods(f"run{i}-", draw(st.integers(0, 2)))))
        if bound and draw(st.integers(0, 3)) == 0:
            # A pod in its grace period: spread constraints no longer count it, affinity still does.
            bound = (replace(bound[0], terminating=True), *bound[1:])
        fits = sum(p.requests["cpu"] for p in bound) <= flavor.allocatable["cpu"]
        node = make_node(f"node{i}", flavor, zone=draw(st.sampled_from(ZONES)), pods=bound if fits else ())
        nodes.append(node)
    daemonsets = ()
    if draw(st.booleans()):
        # Sometimes the agent holds a port pods want, or is too big for the smallest flavors.
        ports = (HostPort(443),) if draw(st.integers(0, 2)) == 0 else ()
        cores = draw(st.sampled_from((0.1, 0.1, 1.5)))
        agent = make_pod("agent", cores, 128 * MI, namespace="kube-system", host_ports=ports)
        daemonsets = (DaemonSet("agent", agent),)
    pending = draw(pods("p", draw(st.integers(1, max_pods))))
    return Snapshot(tuple(pending), catalog, draw(node_pools()), tuple(nodes), daemonsets)


@st.composite
def constrained_snapshots(draw: st.DrawFn) -> Snapshot:
    """Zone-spread, zone-affine and anti-affine groups against cheap small flavors and a pricey large one
    (sometimes tainted), where the greedy grows claims the cost pass has to re-pack under the constraints
    (issue 17)."""
    zones = ZONES[: draw(st.integers(1, 3))]
    taints = (dedicated,) if draw(st.booleans()) else ()
    catalog = (
        make_flavor("small-4", 4, 16 * GI, price=draw(st.sampled_from((0.2, 0.38))), zones=zones),
        make_flavor("small-8", 8, 32 * GI, price=draw(st.sampled_from((0.5, 0.76, 1.0))), zones=zones),
        make_flavor(
            "large-16", 16, 64 * GI, price=draw(st.sampled_from((1.4, 5.0))), zones=zones, taints=taints
        ),
    )
    spread = TopologySpreadConstraint(
        draw(st.integers(1, 2)),
        ZONE,
        "DoNotSchedule",
        LabelSelector(match_labels=(("app", "a"),)),
        node_taints_policy=draw(st.sampled_from(("Ignore", "Honor"))),
    )
    near_a = PodAffinityTerm(LabelSelector(match_labels=(("app", "a"),)), ZONE, ("default",))
    apart = PodAffinityTerm(LabelSelector(match_labels=(("app", "c"),)), HOSTNAME, ("default",))
    shapes = {"a": {"spread": (spread,)}, "b": {"affinity": (near_a,)}, "c": {"anti_affinity": (apart,)}}
    pending = []
    for i in range(draw(st.integers(10, 90))):
        app = draw(st.sampled_from(("a", "a", "b", "c")))
        cores = draw(st.sampled_from((0.25, 0.5, 1)))
        fields: dict[str, object] = dict(shapes[app])
        if draw(st.integers(0, 4)) == 0:
            fields["tolerations"] = (tolerate_dedicated,)
        pending.append(make_pod(f"{app}{i}", cores, 512 * MI, labels={"app": app}, **fields))
    return Snapshot(tuple(pending), catalog, (NodePool(name="default"),), (), ())
