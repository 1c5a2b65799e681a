"""Where the plan put each pod and where kube-scheduler bound it, read at the end of the scale-up.

The provisioner names each pod's claim in its ``Nominated`` Event ("Pod should schedule on:
nodeclaim/NAME"); a claim's ``status.nodeName`` is its Node. A pod bound to another Node than its claim's
took room the plan meant for other pods, which then fit nowhere and buy a straggler claim (issue 14).
The pods and claims are the ones the bench's watches hold (``watch.FleetWatch``); only the Events are
read, through ``sample``, so a slow API server loses the figure, not the run.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from bench.live.watch import FleetWatch, sample
from kapstan.kube.client import Client, Object
from kapstan.kube.kinds import EVENTS

NOMINATED_PREFIX = "Pod should schedule on: nodeclaim/"


async def dump(client: Client, watch: FleetWatch, namespace: str, path: Path) -> dict[str, Any]:
    """Pods and NodeClaims as the bench's watches hold them and the pods' Nominated Events, written to
    ``path``; the summary, or nothing (not recorded) if the Events could not be read."""
    pods, claims = watch.pods.store.objects(), watch.claims.store.objects()
    params = {"fieldSelector": "reason=Nominated"}
    found = await sample(
        "the Nominated Events", lambda: client.request("GET", EVENTS, namespace=namespace, params=params)
    )
    events = found.get("items", []) if found is not None else []
    path.write_text(json.dumps({"pods": pods, "nodeClaims": claims, "events": events}))
    return summarize(pods, claims, events) if found is not None else {}


def summarize(pods: list[Object], claims: list[Object], events: list[Object]) -> dict[str, Any]:
    """How many workload pods kube-scheduler bound on the Node of the claim they were last planned on,
    how many elsewhere, and how many were planned more than once (onto a straggler claim)."""
    node_of = {c["metadata"]["name"]: c.get("status", {}).get("nodeName", "") for c in claims}
    planned: dict[str, list[tuple[str, str]]] = {}
    for event in events:
        message = event.get("message", "")
        if not message.startswith(NOMINATED_PREFIX):
            continue
        pod = event.get("involvedObject", {}).get("name", "")
        when = event.get("firstTimestamp") or event.get("eventTime") or ""
        planned.setdefault(pod, []).append((when, message[len(NOMINATED_PREFIX) :]))
    counts: Counter[str] = Counter()
    for pod in pods:
        name = pod["metadata"]["name"]
        if name not in planned:
            continue
        claims_of_pod = sorted(planned[name])
        bound = pod.get("spec", {}).get("nodeName", "")
        last = claims_of_pod[-1][1]
        counts["planned"] += 1
        counts["replanned"] += len({claim for _, claim in claims_of_pod}) > 1
        if not bound:
            counts["unbound"] += 1
        elif node_of.get(last) == bound:
            counts["boundAsPlanned"] += 1
        else:
            counts["boundElsewhere"] += 1
    return dict(counts)
