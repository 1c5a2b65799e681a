"""``set_members``: the JSON patch the Machine claim, the Node taint and label writes and the condition
writes share. It adds members one by one where the map exists, adds the map whole (tested absent) where it
does not, and holds only while the tested members are as read: applied here with the unit tests' json-patch
(``tests/json_patch.py``, the API server's rules), so each case checks what the server would do with it."""

from __future__ import annotations

import pytest

import json_patch
from kapstan.kube.client import Object
from kapstan.kube.errors import ApiError
from kapstan.kube.jsonpatch import as_read, json_pointer, set_members

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
