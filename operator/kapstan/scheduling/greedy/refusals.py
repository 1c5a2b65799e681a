"""Why a pool cannot open a claim for a pod (twin of `rust/src/solver/greedy/refusals.rs`): the reason a
pod's FailedScheduling Event and the plan give when no flavor of the pool can start a claim for it.
"""

from __future__ import annotations

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.greedy.checks import Checks
from kapstan.scheduling.model import CPU, MEMORY, Pod
from kapstan.scheduling.targets import Flavor, PoolView
from kapstan.scheduling.topology import untolerated


def no_start(
    view: PoolView, checks: Checks, merged: reqs.Requirements, restrict: frozenset[str] | None
) -> str:
    """Why no claim for the pod can open in the pool, when `_starting_flavors` found none."""
    pod = checks.pod
    flavors = [f for f in view.flavors if (restrict is None or f.name in restrict) and f.compatible(merged)]
    if not flavors:
        if not view.flavors and view.crowded:
            return f"its DaemonSets do not fit on {', '.join(view.crowded)}"
        return unmatched(view, checks.requirements, merged, restrict)
    flavors = [f for f in flavors if untolerated(pod.tolerations, f.it.taints, prefer=checks.prefer) is None]
    if not flavors:
        return "it does not tolerate the taints of any flavor"
    flavors = [f for f in flavors if f.ports_free(pod)]
    if not flavors:
        return "a DaemonSet holds its host port on every flavor"
    return too_big(pod, flavors)


def unmatched(
    view: PoolView, pod_reqs: reqs.Requirements, merged: reqs.Requirements, restrict: frozenset[str] | None
) -> str:
    """Name the pod requirement that no flavor of the pool can meet."""
    candidates = [f for f in view.flavors if restrict is None or f.name in restrict]
    for key in pod_reqs:
        if not any(f.compatible({key: merged[key]}) for f in candidates):
            return f"no flavor matches {pod_reqs[key].describe()}"
    return "no flavor matches all of its requirements together"


def too_big(pod: Pod, flavors: list[Flavor]) -> str:
    """The largest flavor left and the resource it is short of for the pod."""
    largest = max(flavors, key=lambda f: (f.net.get(CPU, 0), f.net.get(MEMORY, 0), f.name))
    short = res.first_shortfall({}, pod.requests, largest.net) or CPU
    return (
        f"no flavor is big enough: it requests {short}={res.describe(short, pod.requests.get(short, 0))}, "
        f"the largest flavor {largest.name} has {res.describe(short, max(largest.net.get(short, 0), 0))} "
        "allocatable after DaemonSets"
    )
