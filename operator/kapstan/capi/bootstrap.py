"""The ``karpenter.sh/unregistered`` taint in bootstrap templates: where it goes, whether it is there,
and the tainted copy a template gets (docs/architecture.md#capi-facts).

A new node must come up with that taint so that no pod lands on it before kapstan has matched it to its
NodeClaim (docs/architecture.md#data-flow). CAPI's own taint propagation applies too late, so it has to be in
``KubeadmConfigTemplate.spec.template.spec.joinConfiguration.nodeRegistration.taints``. A revision is a
copy of the template's spec with the taint appended, named after a hash of that spec, so a retry finds the
same object (``capi/revisions.py`` writes it). ``untainted_sources`` lists every managed MD and worker class
of the Cluster still lacking the taint, for the NodeClass status to report.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

from kapstan.api.wellknown import (
    TOPOLOGY_OWNED_LABEL,
    UNREGISTERED_TAINT_EFFECT,
    UNREGISTERED_TAINT_KEY,
    UNREGISTERED_TAINT_TEXT,
    unregistered_taint,
)
from kapstan.capi import contract as c
from kapstan.capi.cache import ManagementCache
from kapstan.catalog.annotations import is_managed
from kapstan.kube.client import Object
from kapstan.kube.store import object_key

TAINT_TEXT = UNREGISTERED_TAINT_TEXT
BOOTSTRAP_KIND = "KubeadmConfigTemplate"
_REVISION_SUFFIX = re.compile(r"-kapstan-[0-9a-f]{10}$")
_MAX_NAME = 253


def has_unregistered_taint(template: Object) -> bool:
    """Whether a KubeadmConfigTemplate makes nodes join with ``karpenter.sh/unregistered:NoExecute``."""
    return any(
        taint.get("key") == UNREGISTERED_TAINT_KEY and taint.get("effect") == UNREGISTERED_TAINT_EFFECT
        for taint in _taints(template)
    )


def tainted_spec(template: Object) -> dict[str, Any]:
    """A copy of the template's spec with the unregistered taint appended to the join taints."""
    spec: dict[str, Any] = copy.deepcopy(template.get("spec") or {})
    node_registration = (
        spec.setdefault("template", {})
        .setdefault("spec", {})
        .setdefault("joinConfiguration", {})
        .setdefault("nodeRegistration", {})
    )
    taints = list(node_registration.get("taints") or [])
    taints.append(unregistered_taint())
    node_registration["taints"] = taints
    return spec


def revision_name(original: str, spec: dict[str, Any]) -> str:
    """``<original>-kapstan-<hash of spec>``: the same spec always gets the same name.

    A revision of a revision keeps the first original's name as its base, so names do not grow.
    """
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    suffix = f"-kapstan-{hashlib.sha256(canonical.encode()).hexdigest()[:10]}"
    base = _REVISION_SUFFIX.sub("", original)
    return base[: _MAX_NAME - len(suffix)].rstrip("-.") + suffix


def bootstrap_ref(md: Object) -> dict[str, Any]:
    ref = md.get("spec", {}).get("template", {}).get("spec", {}).get("bootstrap", {}).get("configRef")
    return ref if isinstance(ref, dict) else {}


def topology_owned(md: Object) -> bool:
    return TOPOLOGY_OWNED_LABEL in c.labels_of(md)


def managed(obj: Object) -> bool:
    return is_managed(c.labels_of(obj), c.annotations_of(obj))


def untainted_sources(cache: ManagementCache) -> list[str]:
    """The managed MDs and worker classes of the Cluster whose bootstrap template lacks the taint.

    An MD is judged by the template it points at now, which for a topology-owned MD is the one CAPI
    generated with the ClusterClass patches applied. A managed worker class with no MD yet is judged by
    its own template, unless a ClusterClass patch mentions the taint: patches are applied when the MD is
    generated, and evaluating them here would mean re-implementing CAPI's patch engine.
    """
    missing: list[str] = []
    generated: set[str] = set()
    cluster = cache.cluster_object()
    entries = c.topology_entries(cluster) if cluster else []
    classes = {str(entry.get("name")): str(entry.get("class")) for entry in entries}
    for md in sorted(cache.machine_deployments.store.objects(), key=object_key):
        if not managed(md) or c.being_deleted(md):
            continue
        what = f"MachineDeployment {object_key(md)}"
        if topology_owned(md):
            entry = c.labels_of(md).get(c.TOPOLOGY_DEPLOYMENT_LABEL, "")
            generated.add(entry)
            if entry in classes:  # the class is what the user has to fix
                what = f"worker class {classes[entry]} ({what})"
        ref = bootstrap_ref(md)
        template = bootstrap_template(cache, ref, c.namespace(md))
        if ref.get("kind") != BOOTSTRAP_KIND:
            missing.append(f"{what}: {_ref_text(ref, c.namespace(md))} is not a {BOOTSTRAP_KIND}")
        elif template is None:
            missing.append(f"{what}: {_ref_text(ref, c.namespace(md))} not found")
        elif not has_unregistered_taint(template):
            missing.append(f"{what}: {_ref_text(ref, c.namespace(md))}")
    missing += _untainted_worker_classes(cache, generated)
    return missing


def _untainted_worker_classes(cache: ManagementCache, generated: set[str]) -> list[str]:
    cluster = cache.cluster_object()
    topology = (cluster or {}).get("spec", {}).get("topology")
    if cluster is None or not isinstance(topology, dict):
        return []
    class_ref = topology.get("classRef") or {}
    namespace = class_ref.get("namespace") or c.namespace(cluster)
    cluster_class = cache.cluster_classes.store.get_by_name(str(class_ref.get("name", "")), namespace)
    if cluster_class is None:
        return []  # in another namespace than the Cluster: kapstan does not watch it
    if UNREGISTERED_TAINT_KEY in json.dumps(cluster_class.get("spec", {}).get("patches") or []):
        return []
    entries = c.topology_entries(cluster)
    workers = cluster_class.get("spec", {}).get("workers", {}).get("machineDeployments") or []
    missing = []
    for worker in workers:
        metadata = worker.get("metadata") or {}
        class_managed = is_managed(metadata.get("labels") or {}, metadata.get("annotations") or {})
        uses = [entry for entry in entries if entry.get("class") == worker.get("class")]
        waiting = [
            entry
            for entry in uses
            if entry.get("name") not in generated
            and (class_managed or managed({"metadata": entry.get("metadata") or {}}))
        ]
        # A class is judged by its own template only while it has no MD to judge by: a managed entry
        # not generated yet, or a managed class no entry uses yet (kapstan adds one when first needed).
        if not waiting and not (class_managed and not uses):
            continue
        ref = (worker.get("bootstrap") or {}).get("templateRef") or {}
        template = bootstrap_template(cache, ref, namespace)
        if template is None or not has_unregistered_taint(template):
            missing.append(
                f"worker class {worker.get('class')} of ClusterClass {object_key(cluster_class)}: "
                f"{_ref_text(ref, namespace)}"
            )
    return missing


def bootstrap_template(cache: ManagementCache, ref: dict[str, Any], namespace: str) -> Object | None:
    """The KubeadmConfigTemplate ``ref`` names, from the cache; None for another kind or a missing one."""
    if ref.get("kind") != BOOTSTRAP_KIND or not ref.get("name"):
        return None
    return cache.bootstrap_templates.store.get_by_name(str(ref["name"]), namespace)


def _ref_text(ref: dict[str, Any], namespace: str) -> str:
    return f"{ref.get('kind') or 'bootstrap template'} {namespace}/{ref.get('name', '')}"


def _taints(template: Object) -> list[dict[str, Any]]:
    spec = template.get("spec", {}).get("template", {}).get("spec", {})
    return list(spec.get("joinConfiguration", {}).get("nodeRegistration", {}).get("taints") or [])
