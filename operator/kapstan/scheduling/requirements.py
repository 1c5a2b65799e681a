"""The requirements algebra shared by provisioning, disruption and the validator.

A `Requirement` is the set of values a label may take on a node, plus whether the label may be absent.
NodePool requirements, pod node selectors and affinity terms all become `Requirements`; intersecting
them is how a NodeClaim narrows as pods join it, and `allows` is how a concrete node is matched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kapstan.scheduling.model import NodeSelectorRequirement, parse_int64


@dataclass(frozen=True)
class Requirement:
    """Allowed values of one label key.

    `complement=False`: the label's value must be one of `values`. `complement=True`: any value except
    `values`. `greater_than`/`less_than` (strict) further restrict present values to integers in range.
    `absent_ok`: a node without the label satisfies it (NotIn, DoesNotExist).
    """

    key: str
    complement: bool
    values: frozenset[str]
    absent_ok: bool
    greater_than: int | None = None
    less_than: int | None = None
    min_values: int | None = None

    @staticmethod
    def from_selector(req: NodeSelectorRequirement) -> Requirement:
        op, values = req.operator, frozenset(req.values)
        if op == "In":
            return Requirement(req.key, False, values, False, min_values=req.min_values)
        if op == "NotIn":
            return Requirement(req.key, True, values, True, min_values=req.min_values)
        if op == "Exists":
            return Requirement(req.key, True, frozenset(), False, min_values=req.min_values)
        if op == "DoesNotExist":
            return Requirement(req.key, False, frozenset(), True)
        # Validated at parse time (placement.check_values); 0 as Rust reads a value that is not a number.
        bound = parse_int64(req.values[0]) if req.values else None
        bound = bound if bound is not None else 0
        # minValues holds for the numeric operators too: Karpenter counts the key's distinct values among
        # the flavors left, whatever the operator.
        floor = req.min_values
        if op == "Gt":
            return Requirement(req.key, True, frozenset(), False, greater_than=bound, min_values=floor)
        if op == "Gte":
            return Requirement(req.key, True, frozenset(), False, greater_than=bound - 1, min_values=floor)
        if op == "Lt":
            return Requirement(req.key, True, frozenset(), False, less_than=bound, min_values=floor)
        return Requirement(req.key, True, frozenset(), False, less_than=bound + 1, min_values=floor)  # Lte

    @staticmethod
    def exactly(key: str, value: str) -> Requirement:
        return Requirement(key, False, frozenset({value}), False)

    @staticmethod
    def any_value(key: str) -> Requirement:
        """Present with any value, or absent: the neutral element of intersection."""
        return Requirement(key, True, frozenset(), True)

    def _in_bounds(self, value: str) -> bool:
        if self.greater_than is None and self.less_than is None:
            return True
        number = parse_int64(value)
        if number is None:
            return False
        if self.greater_than is not None and number <= self.greater_than:
            return False
        return self.less_than is None or number < self.less_than

    def has(self, value: str) -> bool:
        """Whether a node whose label `key` equals `value` satisfies the requirement."""
        if not self._in_bounds(value):
            return False
        return (value not in self.values) if self.complement else (value in self.values)

    def allows(self, value: str | None) -> bool:
        """Whether a node with this label value (None: label absent) satisfies the requirement."""
        return self.absent_ok if value is None else self.has(value)

    def intersect(self, other: Requirement) -> Requirement:
        greater = _max_opt(self.greater_than, other.greater_than)
        less = _min_opt(self.less_than, other.less_than)
        if self.complement and other.complement:
            complement, values = True, self.values | other.values
        elif self.complement:
            complement, values = False, other.values - self.values
        elif other.complement:
            complement, values = False, self.values - other.values
        else:
            complement, values = False, self.values & other.values
        merged = Requirement(
            self.key,
            complement,
            values,
            self.absent_ok and other.absent_ok,
            greater,
            less,
            _max_opt(self.min_values, other.min_values),
        )
        if not complement and (greater is not None or less is not None):
            merged = Requirement(
                self.key,
                False,
                frozenset(v for v in values if merged._in_bounds(v)),
                merged.absent_ok,
                greater,
                less,
                merged.min_values,
            )
        return merged

    def present_possible(self) -> bool:
        """Whether some present value satisfies it."""
        if not self.complement:
            return bool(self.values)
        if self.greater_than is not None and self.less_than is not None:
            span = self.less_than - self.greater_than - 1
            excluded = sum(1 for v in self.values if self._in_bounds(v))
            return span > excluded
        return True

    def is_empty(self) -> bool:
        return not self.absent_ok and not self.present_possible()

    def single_value(self) -> str | None:
        """The one value a node must carry, if the requirement pins it."""
        if not self.complement and len(self.values) == 1 and not self.absent_ok:
            return next(iter(self.values))
        return None

    def describe(self) -> str:
        if self.greater_than is not None or self.less_than is not None:
            low = "" if self.greater_than is None else f">{self.greater_than}"
            high = "" if self.less_than is None else f"<{self.less_than}"
            return f"{self.key} {low}{' ' if low and high else ''}{high}"
        values = ", ".join(sorted(self.values))
        if self.complement:
            return f"{self.key} NotIn [{values}]" if values else f"{self.key} Exists"
        return f"{self.key} In [{values}]" if values else f"{self.key} DoesNotExist"


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


Requirements = Mapping[str, Requirement]


def build(
    reqs: Iterable[NodeSelectorRequirement], labels: Mapping[str, str] | None = None
) -> dict[str, Requirement]:
    """Requirements from selector requirements (ANDed) and exact labels (a nodeSelector or template labels)."""
    out: dict[str, Requirement] = {}
    for key, value in (labels or {}).items():
        add(out, Requirement.exactly(key, value))
    for req in reqs:
        add(out, Requirement.from_selector(req))
    return out


def add(reqs: dict[str, Requirement], req: Requirement) -> None:
    current = reqs.get(req.key)
    reqs[req.key] = req if current is None else current.intersect(req)


def intersect(a: Requirements, b: Requirements) -> dict[str, Requirement]:
    out = dict(a)
    for req in b.values():
        add(out, req)
    return out


def carried_value(req: Requirement) -> str | None:
    """The value a new node carries for a key that only its NodePool's requirements define (no flavor has
    the label and the template does not set it), under what the claim's pods narrowed it to.

    None when the node may go without the label (NotIn, DoesNotExist) or nothing is allowed. Otherwise one
    allowed value, as Karpenter's `Requirement.Any` gives the NodeClaim one; Karpenter draws it at random,
    both engines take the first instead so that plans repeat: the smallest value of an In, or the smallest
    integer from the lower bound (from 0 without one, downwards below an upper bound of 0 or less) that
    the bounds and the excluded values allow.
    """
    if req.absent_ok or req.is_empty():
        return None
    if not req.complement:
        return min(req.values)
    if req.greater_than is not None:
        start, step = req.greater_than + 1, 1
    elif req.less_than is not None and req.less_than <= 0:
        start, step = req.less_than - 1, -1
    else:
        start, step = 0, 1
    # At most len(values) candidates are excluded, so the search ends within len(values) + 1 steps;
    # is_empty() already said that a bounded range holds an allowed integer.
    for offset in range(len(req.values) + 1):
        candidate = str(start + step * offset)
        if req.has(candidate):
            return candidate
    return None


def first_conflict(reqs: Requirements, labels: Mapping[str, str]) -> Requirement | None:
    """The first requirement that a node with exactly these labels violates, or None."""
    for req in reqs.values():
        if not req.allows(labels.get(req.key)):
            return req
    return None
