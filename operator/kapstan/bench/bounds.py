"""A lower bound on the hourly cost of any valid plan for a snapshot, from a covering LP (HiGHS).

Variables: how many nodes of each option (kapstan/bench/options.py: flavor x offering x NodePool, plus the free
room of existing nodes at price zero, at most one each), continuous. Minimise total price subject to:

- **capacity**: for every resource the pods request (cpu, memory, pods, GPUs, ...) the options cover the
  total demand, capacity being allocatable minus the DaemonSets that would run on that node;
- **compatibility**: pods that fit only some options (node selectors, taints, GPU pods needing GPU
  flavors, large pods needing large flavors) are covered again by those options alone: one capacity
  block per distinct compatible set S, covering every pod whose compatible set lies inside S;
- **separation**: pods that must be on different nodes (hostname anti-affinity that selects its own pods;
  hostname topology spread, at most maxSkew per node) need at least that many nodes among their options;
- **limits**: NodePool limits (resources and `nodes`) cap the nodes bought from that pool.

The same model with integer node counts (`integer`, HiGHS MILP under a time limit, its proven dual bound
if the limit is hit) is still a relaxation: it pools capacity across nodes instead of packing pods into
bins. Neither models zones (zone spread, zone affinity or anti-affinity), preferences, host ports, or
which pods can share a node beyond the separation counts, so a plan can sit well above the bound when
those bite (many nodes forced by hostname anti-affinity, pods too big to pack two per node, ...).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from kapstan.bench.options import Option, Shape, build_options, build_shapes
from kapstan.scheduling.model import HOSTNAME, Snapshot
from kapstan.scheduling.topology import spread_group, term_group


@dataclass(frozen=True)
class Bound:
    lp: float | None
    integer: float | None
    integer_optimal: bool
    variables: int
    rows: int
    excluded_pods: int
    """Pods that fit no option at all (not counted: no plan can place them)."""
    min_nodes: int
    """The largest separation count: nodes any plan needs."""
    seconds: float

    @property
    def best(self) -> float | None:
        values = [v for v in (self.lp, self.integer) if v is not None]
        return max(values) if values else None


def separations(
    snapshot: Snapshot, shape_of: dict[str, int], shapes: list[Shape]
) -> list[tuple[int, frozenset[int]]]:
    """(nodes needed, options they may use) for each group of pods that must be spread over nodes."""
    groups: dict[object, tuple[int, list[str]]] = {}
    for pod in snapshot.pods:
        for term in pod.anti_affinity:
            group = term_group(term)
            if term.topology_key == HOSTNAME and group.selects(pod):
                groups.setdefault(("anti", group), (1, []))[1].append(pod.key)
        for c in pod.spread:
            group = spread_group(pod, c)
            if c.topology_key == HOSTNAME and c.when_unsatisfiable == "DoNotSchedule" and group.selects(pod):
                groups.setdefault(("spread", group, c.max_skew), (c.max_skew, []))[1].append(pod.key)
    out = []
    for per_node, members in groups.values():
        allowed = frozenset().union(*(shapes[shape_of[m]].options for m in members))
        out.append((math.ceil(len(members) / per_node), allowed))
    return out


def _merge(options: list[Option], shapes: list[Shape], resources: list[str]) -> list[list[int]]:
    """Options that are interchangeable for the bound (same pool, price, capacity, compatible shapes)
    become one variable; returns the option indices behind each variable."""
    members: dict[object, list[int]] = {}
    for i, option in enumerate(options):
        if option.existing:
            members[("existing", i)] = [i]
            continue
        signature = frozenset(s for s, shape in enumerate(shapes) if i in shape.options)
        capacity = tuple(option.capacity.get(r, 0) for r in resources)
        key = (option.pool, option.price, capacity, tuple(sorted(option.charged.items())), signature)
        members.setdefault(key, []).append(i)
    return list(members.values())


def _capacity(resource: str, option: Option) -> float:
    return max(option.capacity.get(resource, 0), 0)


def _one(option: Option) -> float:
    return 1.0


def _charged(key: str, option: Option) -> float:
    """What one node of the option counts against a pool limit (`nodes` is in milli-units too)."""
    return 1000.0 if key == "nodes" else option.charged.get(key, 0)


def lower_bound(snapshot: Snapshot, integer_seconds: float = 10.0) -> Bound:
    started = time.perf_counter()
    options = build_options(snapshot)
    shapes, shape_of = build_shapes(snapshot.pods, options)
    placeable = [s for s in shapes if s.options]
    excluded = sum(s.count for s in shapes if not s.options)
    resources = sorted({r for s in placeable for r, v in s.example.requests.items() if v})
    variables = _merge(options, shapes, resources)
    var_of = {i: v for v, group in enumerate(variables) for i in group}
    first = [options[group[0]] for group in variables]
    rows: list[np.ndarray] = []
    lower: list[float] = []
    upper: list[float] = []

    def row(option_indices: frozenset[int], weight: Callable[[Option], float]) -> np.ndarray:
        out = np.zeros(len(variables))
        for v in sorted({var_of[i] for i in option_indices}):
            out[v] = weight(first[v])
        return out

    for allowed in sorted({s.options for s in placeable}, key=sorted):
        inside = [s for s in placeable if s.options <= allowed]
        for r in resources:
            demand = sum(s.count * s.example.requests.get(r, 0) for s in inside)
            if demand > 0:
                rows.append(row(allowed, partial(_capacity, r)) / demand)
                lower.append(1.0)
                upper.append(np.inf)
    seps = separations(snapshot, shape_of, shapes)
    for needed, allowed in seps:
        rows.append(row(allowed, _one) / needed)
        lower.append(1.0)
        upper.append(np.inf)
    for pool in snapshot.node_pools:
        in_pool = frozenset(i for i, o in enumerate(options) if o.pool == pool.name)
        for key, limit in pool.limits.items():
            left = max(limit - pool.usage.get(key, 0), 0)
            rows.append(row(in_pool, partial(_charged, key)))
            lower.append(-np.inf)
            upper.append(float(left))
    price = np.array([o.price for o in first])
    cap = np.array([1.0 if o.existing else np.inf for o in first])
    matrix = np.array(rows) if rows else np.zeros((0, len(variables)))
    lp_value = _solve_lp(price, matrix, np.array(lower), np.array(upper), cap)
    integer, optimal = _solve_milp(price, matrix, np.array(lower), np.array(upper), cap, integer_seconds)
    min_nodes = max((n for n, _ in seps), default=0)
    return Bound(
        lp_value,
        integer,
        optimal,
        len(variables),
        len(rows),
        excluded,
        min_nodes,
        time.perf_counter() - started,
    )


def _solve_lp(
    price: np.ndarray, matrix: np.ndarray, lower: np.ndarray, upper: np.ndarray, cap: np.ndarray
) -> float | None:
    if not len(price):
        return None
    # linprog wants A_ub x <= b_ub: a covering row (lower bound) is negated, a limit row kept.
    covering = np.isfinite(lower)
    a_ub = np.vstack([-matrix[covering], matrix[~covering]]) if len(matrix) else None
    b_ub = np.concatenate([-lower[covering], upper[~covering]]) if len(matrix) else None
    bounds = [(0.0, None if math.isinf(c) else c) for c in cap]
    result = linprog(price, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    return float(result.fun) if result.status == 0 else None


def _solve_milp(
    price: np.ndarray,
    matrix: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    cap: np.ndarray,
    seconds: float,
) -> tuple[float | None, bool]:
    if not len(price) or seconds <= 0:
        return None, False
    constraints = [LinearConstraint(matrix, lower, upper)] if len(matrix) else []
    result = milp(
        price,
        constraints=constraints,
        integrality=np.ones(len(price)),
        bounds=Bounds(np.zeros(len(price)), cap),
        options={"time_limit": seconds},
    )
    if result.status == 0:
        return float(result.fun), True
    dual = getattr(result, "mip_dual_bound", None)
    return (float(dual) if dual is not None and math.isfinite(dual) else None), False
