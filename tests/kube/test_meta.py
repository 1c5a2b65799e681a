"""``Meta``: typed reads of an object's metadata, absent fields read as empty."""

from __future__ import annotations

from kapstan.kube.meta import Meta


def test_absent_maps_and_lists_read_as_empty() -> None:
    meta = Meta.of({"metadata": {"name": "bare"}})
    assert (meta.name, meta.namespace, dict(meta.labels), dict(meta.annotations)) == ("bare", "", {}, {})
    assert (meta.finalizers, meta.generation, meta.created, meta.deleted) == ((), 0, None, None)
    assert not meta.deleting
    assert Meta.of({}).name == ""


def test_fields_are_read_from_the_object() -> None:
    pod = {
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 3,
            "labels": {"app": "web"},
            "annotations": {"note": "x"},
            "finalizers": ["keep"],
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1"}],
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionTimestamp": "2026-01-02T00:00:00Z",
        }
    }
    meta = Meta.of(pod)
    assert (meta.name, meta.namespace, meta.uid, meta.resource_version, meta.generation) == (
        "web",
        "shop",
        "u-1",
        "42",
        3,
    )
    assert (meta.labels["app"], meta.annotations["note"], meta.finalizers) == ("web", "x", ("keep",))
    assert meta.owned_by("DaemonSet", "ReplicaSet") and not meta.owned_by("DaemonSet", "Node")
    assert meta.created == "2026-01-01T00:00:00Z" and meta.deleting
    assert meta == Meta.of(pod) and meta != Meta.of({"metadata": {"name": "web"}})
