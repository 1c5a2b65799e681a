"""JSON patches (RFC 6902) that set a few members of an object and hold only while what they test is as
the writer read it.

kapstan shares most objects it writes with other writers: the kubelet's and CAPI's status writes, the
node lifecycle controller's taints, our own other controllers. A write conditional on the whole object's
resourceVersion fails on any of them (hundreds of 409s in a 1,000-pod bench.live run, issue 14), while a
JSON patch that ``test``s the one field it depends on fails only when that field changed.

The API server's json-patch passes a ``test`` of a missing member against null but refuses an ``add``
under a missing member (422, like a failed test). So a member of a map the object does not have yet is
written as the map itself, tested absent: a map someone else added since the read refuses the write
instead of being replaced.

``patch_if_unchanged`` sends such a patch: a failed ``test`` is the expected end of a lost race, not an
error, so it returns None and the caller decides again from a newer read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.errors import ApiError

Op = dict[str, object]

AlsoLost = Literal["conflict", "not_found"]
"""Answers besides a failed ``test`` that a caller may count as a lost race: ``conflict`` (409), the API
server giving up on a patch that other writes to the object kept racing (it retries only a few times),
and ``not_found`` (404), the object gone since the read."""


def json_pointer(*members: str) -> str:
    """The JSON pointer (RFC 6901) of nested members, for a JSON patch's ``path``: ``~`` and ``/`` in a
    member name (every label and annotation key with a prefix) are escaped."""
    return "".join("/" + member.replace("~", "~0").replace("/", "~1") for member in members)


def as_read(obj: Object, parent: Sequence[str], *names: str) -> dict[str, object]:
    """Members ``names`` of the map at ``parent`` in ``obj``, None for each one missing: what to pass
    ``set_members`` as ``tested`` for a write that holds only if they are unchanged since the read."""
    found = _map_at(obj, parent) or {}
    return {name: found.get(name) for name in names}


def set_members(
    obj: Object,
    parent: Sequence[str],
    values: Mapping[str, object],
    *,
    tested: Mapping[str, object] | None = None,
) -> list[Op]:
    """The ops that set the members ``values`` of the map at ``parent`` (``("metadata", "labels")``)
    if each member in ``tested`` still has its value there (None: absent); ``obj`` is the object as read.

    Members are added one by one, so the map's other members (another writer's label, annotation or
    status field) are left alone. Where ``obj`` has no map at ``parent``, the map is tested absent and
    added whole with ``values``; its tested members are then absent, so they must be tested against None.
    The map's own parent must exist (``metadata``, the object's root). No values and no tests: no ops.
    """
    tested = tested or {}
    if not values and not tested:
        return []
    if _map_at(obj, parent) is not None:
        return [
            *({"op": "test", "path": json_pointer(*parent, name), "value": v} for name, v in tested.items()),
            *({"op": "add", "path": json_pointer(*parent, name), "value": v} for name, v in values.items()),
        ]
    expected = {name: value for name, value in tested.items() if value is not None}
    if expected:
        raise ValueError(f"testing {sorted(expected)} under {json_pointer(*parent)}, which the object lacks")
    ops: list[Op] = [{"op": "test", "path": json_pointer(*parent), "value": None}]
    if values:
        ops.append({"op": "add", "path": json_pointer(*parent), "value": dict(values)})
    return ops


async def patch_if_unchanged(
    client: Client,
    resource: Resource,
    name: str,
    ops: list[Op],
    *,
    namespace: str | None = None,
    subresource: str = "",
    also_lost: tuple[AlsoLost, ...] = (),
) -> Object | None:
    """Send the JSON patch ``ops`` (built to ``test`` what it depends on); the patched object, or None
    when the write lost its race: a ``test`` failed, or the answer is one of ``also_lost``.

    Every other error is raised, an object the write made invalid included (422 too, but reading again
    would only repeat it). A caller widens ``also_lost`` only for the answers it means to read as "decide
    again", so a 404 or 409 no caller expects still surfaces.
    """
    try:
        return await client.patch(
            resource, name, ops, namespace=namespace, subresource=subresource, patch_type="json"
        )
    except ApiError as error:
        lost = (
            error.test_failed
            or ("conflict" in also_lost and error.conflict)
            or ("not_found" in also_lost and error.not_found)
        )
        if lost:
            return None
        raise


def _map_at(obj: Object, parent: Sequence[str]) -> Mapping[str, object] | None:
    holder: object = obj
    for member in parent:
        holder = holder.get(member) if isinstance(holder, Mapping) else None
    return holder if isinstance(holder, Mapping) else None
