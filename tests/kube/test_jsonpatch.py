"""``set_members``: the JSON patch the Machine claim, the Node taint and label writes and the condition
writes share. It adds members one by one where the map exists, adds the map whole (tested absent) where it
does not, and holds only while the tested members are as read: applied here with the unit tests' json-patch
(``tests/json_patch.py``, the API server's rules), so each case checks what the server would do with it.
``patch_if_unchanged`` sends such a patch and tells a lost race (None) from an error (raised)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import json_patch
from kapstan.kube.client import Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.jsonpatch import AlsoLost, Op, as_read, json_pointer, patch_if_unchanged, set_members
from kapstan.kube.kinds import NODES

LABELS = ("metadata", "labels")
STATUS = ("status",)


def _node(**metadata: object) -> Object:
    return {"metadata": {"name": "n", **metadata}, "spec": {}}


def test_a_pointer_escapes_the_slash_and_tilde_of_a_member_name() -> None:
    assert json_pointer("metadata", "labels", "example.com/a~b") == "/metadata/labels/example.com~1a~0b"


def test_members_are_added_one_by_one_and_the_others_are_kept() -> None:
    read = _node(labels={"theirs": "1"})
    ops = set_members(read, LABELS, {"example.com/pool": "a"})
    assert ops == [{"op": "add", "path": "/metadata/labels/example.com~1pool", "value": "a"}]
    since = _node(labels={"theirs": "1", "added-since": "2"})
    assert json_patch.apply(since, ops)["metadata"]["labels"] == {
        "theirs": "1",
        "added-since": "2",
        "example.com/pool": "a",
    }


def test_a_missing_map_is_added_whole_tested_absent() -> None:
    read = _node()
    ops = set_members(read, LABELS, {"pool": "a"})
    assert ops == [
        {"op": "test", "path": "/metadata/labels", "value": None},
        {"op": "add", "path": "/metadata/labels", "value": {"pool": "a"}},
    ]
    assert json_patch.apply(read, ops)["metadata"]["labels"] == {"pool": "a"}
    with pytest.raises(ApiError) as refused:
        json_patch.apply(_node(labels={"added-since": "1"}), ops)  # someone else's map is not replaced
    assert refused.value.test_failed


def test_tested_members_refuse_the_write_when_they_changed_since_the_read() -> None:
    read: Object = {"metadata": {"name": "p"}, "status": {"resources": {"nodes": "1"}}}
    conditions = [{"type": "Healthy", "status": "True"}]
    ops = set_members(read, STATUS, {"conditions": conditions}, tested=as_read(read, STATUS, "conditions"))
    assert ops == [
        {"op": "test", "path": "/status/conditions", "value": None},
        {"op": "add", "path": "/status/conditions", "value": conditions},
    ]
    other_field_since = {**read, "status": {"resources": {"nodes": "2"}}}
    assert json_patch.apply(other_field_since, ops)["status"] == {
        "resources": {"nodes": "2"},
        "conditions": conditions,
    }
    with pytest.raises(ApiError) as refused:
        json_patch.apply({**read, "status": {"conditions": [{"type": "Ready"}]}}, ops)
    assert refused.value.test_failed


def test_tested_members_of_a_missing_map_are_tested_through_the_map() -> None:
    read = _node()
    ops = set_members(
        read, ("metadata", "annotations"), {"claim": "a"}, tested={"claim": None, "delete": None}
    )
    assert ops == [
        {"op": "test", "path": "/metadata/annotations", "value": None},
        {"op": "add", "path": "/metadata/annotations", "value": {"claim": "a"}},
    ]
    with pytest.raises(ValueError, match="lacks"):
        set_members(read, ("metadata", "annotations"), {"claim": "a"}, tested={"claim": "b"})


def test_nothing_to_set_or_test_is_no_ops() -> None:
    assert set_members(_node(), LABELS, {}) == []
    assert set_members(_node(labels={"a": "1"}), LABELS, {}) == []


def test_as_read_gives_none_for_what_the_object_lacks() -> None:
    assert as_read(_node(), STATUS, "conditions") == {"conditions": None}
    assert as_read(_node(labels={"a": "1"}), LABELS, "a", "b") == {"a": "1", "b": None}


class _Server:
    """One object behind ``patch``, as the API server would answer: the JSON patch applied (a failed
    ``test`` refused with 422), or ``refusal`` raised instead when a test sets one."""

    def __init__(self, obj: Object) -> None:
        self.obj = obj
        self.refusal: ApiError | None = None
        self.sent: list[dict[str, Any]] = []

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> Object:
        self.sent.append({"resource": resource, "name": name, **kwargs})
        if self.refusal is not None:
            raise self.refusal
        self.obj = json_patch.apply(self.obj, patch)
        return self.obj


def _patch(server: _Server, ops: list[Op], **kwargs: Any) -> Object | None:
    return asyncio.run(patch_if_unchanged(server, NODES, "n", ops, **kwargs))  # type: ignore[arg-type]


def _set_pool(read: Object) -> list[Op]:
    return set_members(read, LABELS, {"pool": "b"}, tested=as_read(read, LABELS, "pool"))


def test_a_write_that_holds_returns_the_patched_object_sent_as_a_json_patch() -> None:
    read = _node(labels={"pool": "a"})
    server = _Server(read)
    patched = _patch(server, _set_pool(read), namespace="ns", subresource="status")
    assert patched is not None and patched["metadata"]["labels"] == {"pool": "b"}
    assert server.sent == [
        {"resource": NODES, "name": "n", "namespace": "ns", "subresource": "status", "patch_type": "json"}
    ]


def test_a_failed_test_is_a_lost_race_and_writes_nothing() -> None:
    read = _node(labels={"pool": "a"})
    server = _Server(_node(labels={"pool": "c"}))  # another writer's label since the read
    assert _patch(server, _set_pool(read)) is None
    assert server.obj["metadata"]["labels"] == {"pool": "c"}


@pytest.mark.parametrize(
    "refusal",
    [
        ApiError("invalid", status=422, invalid_object=True),  # reading again would repeat it
        ApiError("conflict", status=409),
        ApiError("not found", status=404),
        ApiError("server error", status=500),
        ApiError("no answer"),
    ],
)
def test_any_other_answer_is_raised_unless_the_caller_counts_it_as_lost(refusal: ApiError) -> None:
    server = _Server(_node())
    server.refusal = refusal
    with pytest.raises(ApiError) as raised:
        _patch(server, _set_pool(_node()))
    assert raised.value is refusal


@pytest.mark.parametrize(
    ("status", "also_lost", "lost"),
    [
        (409, ("conflict",), True),
        (404, ("not_found",), True),
        (409, ("conflict", "not_found"), True),
        (404, ("conflict", "not_found"), True),
        (404, ("conflict",), False),
        (409, ("not_found",), False),
        (500, ("conflict", "not_found"), False),
    ],
)
def test_only_the_answers_a_caller_names_are_lost_races_besides_a_failed_test(
    status: int, also_lost: tuple[AlsoLost, ...], lost: bool
) -> None:
    server = _Server(_node())
    server.refusal = ApiError("refused", status=status)
    if lost:
        assert _patch(server, _set_pool(_node()), also_lost=also_lost) is None
    else:
        with pytest.raises(ApiError):
            _patch(server, _set_pool(_node()), also_lost=also_lost)
