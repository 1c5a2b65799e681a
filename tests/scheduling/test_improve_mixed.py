"""The cost pass's mixed-flavor move (mixed.py): claims re-packed into a general-purpose and a
CPU-optimised flavor together when the pods' CPU to memory ratio lies between the two (issue 17)."""

from __future__ import annotations

from builders import GI, MI, make_flavor, make_pod, snapshot
from kapstan.bench.workloads import capi_catalog
from kapstan.scheduling import solve
from kapstan.scheduling.greedy import Scheduler
from kapstan.scheduling.greedy.order import interleaved, slot_paced
from kapstan.scheduling.mixed import MixedSplit, splits
from kapstan.scheduling.model import CPU, MEMORY, Snapshot
from kapstan.scheduling.validator import validate

# What greedy and the other moves alone pay for capi-200: b3 flavors only, CPU full, memory idle.
CAPI_200_WITHOUT_MIX = 10.2827
# Two general-purpose sizes (4 GiB a CPU) and a CPU-optimised one (2 GiB a CPU), at the prices of the
# capi catalog's b3-32, b3-64 and c3-16 (kapstan.bench.catalogs).
GENERAL_AND_CPU_RICH = (
    make_flavor("g-32", 8, 32 * GI, price=0.2032),
    make_flavor("g-64", 16, 64 * GI, price=0.4064),
    make_flavor("c-16", 8, 16 * GI, price=0.1836),
)


def batch_and_cache(flavors: tuple[object, ...]) -> Snapshot:
    """16 CPU-heavy pods (2 CPU, 1 GiB) and 16 memory-heavy ones (1 CPU, 6 GiB): 48 CPU and 112 GiB."""
    pods = [make_pod(f"batch-{i}", 2, 1 * GI) for i in range(16)]
    pods += [make_pod(f"cache-{i}", 1, 6 * GI) for i in range(16)]
    return snapshot(pods, flavors=flavors)  # type: ignore[arg-type]


def greedy_splits(snap: Snapshot) -> list[MixedSplit]:
    scheduler = Scheduler(snap)
    assert scheduler.schedule() == {}
    claims = tuple(scheduler.claims)
    return splits(claims, [p for c in claims for p in c.pods])


def greedy_split(snap: Snapshot) -> MixedSplit | None:
    """The split the whole-node estimate rates best."""
    return next(iter(greedy_splits(snap)), None)


def test_cpu_heavy_pods_go_to_the_cpu_rich_flavor_and_the_rest_to_the_general_one() -> None:
    parts = greedy_split(batch_and_cache(GENERAL_AND_CPU_RICH))
    assert parts is not None
    # Counted as whole nodes, two c-16 of the most CPU-heavy pods and the rest on c-16 and g-32 cost
    # least (all on g-64, as the greedy pass grows its claims, costs 3 x 0.4064).
    assert len(parts.cpu_rich) == 8
    assert all(p.name.startswith("batch-") for p in parts.cpu_rich)
    assert parts.cpu_rich_flavors == {"c-16"}
    assert parts.rest_flavors == {"c-16", "g-32"}
    # Every pod is in exactly one part, and the split follows memory per CPU.
    assert len(parts.cpu_rich) + len(parts.rest) == 32
    ratio = [p.requests[MEMORY] / p.requests[CPU] for p in parts.cpu_rich + parts.rest]
    assert max(ratio[: len(parts.cpu_rich)]) <= min(ratio[len(parts.cpu_rich) :])


def test_the_move_also_offers_the_best_split_of_the_next_size_of_the_cpu_rich_part() -> None:
    offered = greedy_splits(batch_and_cache(GENERAL_AND_CPU_RICH))
    # The estimate's best fills two c-16 with the CPU-heavy pods; its best with one c-16 is offered
    # second (first fit may pack it cheaper than the estimate says), and no third.
    assert [len(parts.cpu_rich) for parts in offered] == [8, 4]
    assert all(p.name.startswith("batch-") for p in offered[1].cpu_rich)
    assert len(offered[1].rest) == 28


def test_the_move_does_not_apply_when_every_flavor_has_one_shape() -> None:
    flavors = (make_flavor("g-16", 4, 16 * GI, price=0.1016), make_flavor("g-32", 8, 32 * GI, price=0.2032))
    assert greedy_split(batch_and_cache(flavors)) is None


def test_a_capi_batch_is_planned_on_a_cheaper_mix_of_flavor_families(engine: str) -> None:
    snap = capi_catalog(200)
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    assert plan.unschedulable == {}
    assert plan.total_price_per_hour < CAPI_200_WITHOUT_MIX - 0.1
    families = {claim.instance_type.split("-")[0] for claim in plan.node_claims}
    assert {"b3", "c3"} <= families


def test_slot_paced_draws_the_small_pods_in_as_the_cpu_is_taken() -> None:
    """Three pods of 4 CPU and six of 500m, one shape: interleaved leaves the six to the end (the last
    claims' pod slots), slot-paced puts two after each big one, the count of pods keeping pace with the
    CPU taken (4 CPU of 15 is 2.4 pods of 9)."""
    pods = [make_pod(f"big-{i}", 4, 4000 * MI) for i in range(3)]
    pods += [make_pod(f"small-{i}", 0.5, 500 * MI) for i in range(6)]
    assert [p.name.split("-")[0] for p in interleaved(pods)] == ["big"] * 3 + ["small"] * 6
    assert [p.name.split("-")[0] for p in slot_paced(pods)] == ["big", "small", "small"] * 3
    assert sorted(p.name for p in slot_paced(pods)) == sorted(p.name for p in pods)
