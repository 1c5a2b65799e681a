"""An informer against a real API server sees every change in order, and keeps doing so across watches
the server closes (a 1 s ``timeoutSeconds`` forces a reconnect every second) without relisting."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from kube_helpers import eventually, fresh_namespace

from kapstan.kube.client import CONFIGMAPS, Client
from kapstan.kube.informer import Informer
from kapstan.kube.store import Event, label_indexer
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox

LABELS = {"test": "informer"}


def configmap(namespace: str, name: str, **data: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "labels": {**LABELS, "owner": name}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_sees_changes_in_order_across_server_closed_watches(sandbox: Sandbox) -> None:
    asyncio.run(_scenario(str(sandbox.workload_kubeconfig)))


async def _scenario(kubeconfig: str) -> None:
    client = await Client.connect(kubeconfig)
    namespace = await fresh_namespace(client, "informer")
    seen: list[tuple[str, str, str]] = []
    watches = 0
    real_watch = client.watch

    def counting_watch(
        *args: Any, **kwargs: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        nonlocal watches
        watches += 1
        return real_watch(*args, **kwargs)

    client.watch = counting_watch  # type: ignore[method-assign]

    def record(event: Event) -> None:
        seen.append((event.type, event.object["metadata"]["name"], event.object.get("data", {}).get("v", "")))

    informer = Informer(
        client,
        CONFIGMAPS,
        namespace=namespace,
        label_selector="test=informer",  # leaves out the namespace's kube-root-ca.crt
        indexers={"owner": label_indexer("owner")},
        handler=record,
        watch_timeout=1,
    )
    task = asyncio.create_task(informer.run())
    try:
        await client.create(CONFIGMAPS, configmap(namespace, "before", v="0"))
        await informer.wait_synced()
        a = await client.create(CONFIGMAPS, configmap(namespace, "a", v="1"))
        a["data"]["v"] = "2"
        await client.replace(CONFIGMAPS, a)
        await client.create(CONFIGMAPS, configmap(namespace, "b", v="1"))
        await client.delete(CONFIGMAPS, "a", namespace)
        await eventually("the first four changes", lambda: len(seen) >= 5)

        # Outlive a few server-closed watches, then change something: it must arrive exactly once.
        await eventually("two reconnects", lambda: watches >= 3, timeout=10.0)
        await client.delete(CONFIGMAPS, "before", namespace)
        await eventually("the change after reconnecting", lambda: len(seen) >= 6)
        await asyncio.sleep(1.5)  # one more reconnect: nothing may be replayed
    finally:
        task.cancel()
    # "before" may arrive by the list or by the watch, depending on timing; either way, once.
    assert seen == [
        ("ADDED", "before", "0"),
        ("ADDED", "a", "1"),
        ("MODIFIED", "a", "2"),
        ("ADDED", "b", "1"),
        ("DELETED", "a", "2"),
        ("DELETED", "before", "0"),
    ]
    assert sorted(informer.store.keys()) == [f"{namespace}/b"]
    assert [o["metadata"]["name"] for o in informer.store.by_index("owner", "b")] == ["b"]
