"""The article's catalog and the snapshot built on it, shared by the snapshot tests (test_snapshot.py,
test_snapshot_in_flight.py)."""

from __future__ import annotations

from pathlib import Path

from kapstan.api import load_text
from kapstan.scheduling.model import Snapshot
from kapstan.snapshot import build_snapshot

SCENARIOS = Path(__file__).parent / "scenarios"
MI = 2**20 * 1000

CATALOG = (SCENARIOS / "article-catalog-mds.yaml").read_text()
AGENT_CPU, AGENT_MEMORY, ONE_POD = 100, 128 * MI, 1000
"""The catalog's node agent DaemonSet requests (100m, 128Mi, a pod): set aside on every node that will run
it and has no pod of it yet (snapshot_daemons)."""

_DOCUMENTS = CATALOG.replace("zone=nova", "zone=zone-a").split("\n---\n")
_SMALL_MD = next(
    doc for doc in _DOCUMENTS if "kind: MachineDeployment" in doc and "name: capi-ovh-karpenter-c3-4\n" in doc
)
THREE_ZONES = "\n---\n".join(
    [
        *_DOCUMENTS,
        *(
            _SMALL_MD.replace(
                "name: capi-ovh-karpenter-c3-4\n", f"name: capi-ovh-karpenter-c3-4-{zone}\n", 1
            ).replace("zone=zone-a", f"zone=zone-{zone}")
            for zone in ("b", "c")
        ),
    ]
)
"""The article's catalog in zone-a, and its c3-4 (2 vCPU) in zone-b and zone-c too."""


def snapshot_of(text: str) -> Snapshot:
    """The snapshot of the catalog and ``text``'s manifests."""
    return build_snapshot(load_text(CATALOG + "\n---\n" + text))
