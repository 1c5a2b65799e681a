"""The store keys objects by namespace/name, keeps custom indices current, and diffs relists."""

from __future__ import annotations

from typing import Any

from kapstan.kube.store import Store, field_indexer, label_indexer


def node(name: str, rv: str = "1", *, pool: str | None = None, provider_id: str = "") -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": pool} if pool else {}
    return {
        "metadata": {"name": name, "resourceVersion": rv, "labels": labels},
        "spec": {"providerID": provider_id} if provider_id else {},
    }


def make_store() -> Store:
    return Store(
        {"pool": label_indexer("karpenter.sh/nodepool"), "providerID": field_indexer("spec", "providerID")}
    )


def test_indices_follow_updates_and_deletes() -> None:
    store = make_store()
    store.upsert(node("a", pool="default", provider_id="test://a"))
    store.upsert(node("b", pool="default"))
    assert [o["metadata"]["name"] for o in store.by_index("pool", "default")] == ["a", "b"]
    assert store.by_index("providerID", "test://a")[0]["metadata"]["name"] == "a"

    event = store.upsert(node("a", "2", pool="gpu", provider_id="test://a"))
    assert event.type == "MODIFIED" and event.old is not None
    assert [o["metadata"]["name"] for o in store.by_index("pool", "default")] == ["b"]
    assert [o["metadata"]["name"] for o in store.by_index("pool", "gpu")] == ["a"]

    assert store.delete(node("a")).type == "DELETED"
    assert store.by_index("pool", "gpu") == []
    assert store.by_index("providerID", "test://a") == []
    assert store.keys() == ["b"]


def test_namespaced_keys() -> None:
    store = Store()
    store.upsert({"metadata": {"name": "x", "namespace": "ns"}})
    assert store.get("ns/x") is store.get_by_name("x", "ns") is not None
    assert store.get_by_name("x") is None


def test_replace_reports_only_what_changed() -> None:
    store = make_store()
    for obj in [node("same"), node("changed"), node("gone")]:
        store.upsert(obj)
    events = store.replace([node("same"), node("changed", "2"), node("new")])
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "changed"),
        ("ADDED", "new"),
        ("DELETED", "gone"),
    ]
    assert sorted(store.keys()) == ["changed", "new", "same"]
