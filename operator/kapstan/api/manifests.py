"""Multi-document YAML in, typed objects out, sorted by what kapstan does with them.

`kapstan simulate -f ...` and the tests read ordinary manifests: whatever a user would `kubectl apply`
to the workload and management clusters. Each document is dispatched on its apiVersion and kind; kinds
kapstan has no use for are skipped, and anything malformed is reported with its file and document.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml

from kapstan.api.capi import (
    BOOTSTRAP_GROUP,
    CAPI_GROUP,
    INFRASTRUCTURE_GROUP_PREFIX,
    Cluster,
    ClusterClass,
    InfrastructureMachineTemplate,
    KubeadmConfigTemplate,
    MachineDeployment,
)
from kapstan.api.core import (
    ConfigMap,
    DaemonSet,
    Deployment,
    Job,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
    Workload,
)
from kapstan.api.errors import ManifestError, shown
from kapstan.api.karpenter import NODECLASS_GROUP, ClusterAPINodeClass, NodeClaim, NodePool
from kapstan.api.legacy import is_legacy, not_served
from kapstan.api.meta import KubeObject
from kapstan.api.yaml_loader import load_yaml_documents, one_line

TemplateKey = tuple[str, str, str]
"""(kind, namespace, name) of a template."""
OwnerKey = tuple[str, str, str]
"""(kind, namespace, name) of a workload that makes pods."""
Controller = Deployment | Job
"""A workload that makes pods from a template (ReplicaSets and StatefulSets are Deployments)."""


Model = TypeVar("Model", bound=KubeObject)


class Parser(Protocol):
    """How ``Manifests.add`` turns a document into its model: ``model.parse``, or a cache of its results
    (the operator's ``controllers/parsed.py``)."""

    def __call__(self, model: type[Model], document: Mapping[str, Any], location: str) -> Model: ...


def parse_each(model: type[Model], document: Mapping[str, Any], location: str) -> Model:
    return model.parse(document, location)


@dataclass
class Manifests:
    """Every object kapstan understands, in the order read (pending pods keep manifest order)."""

    workloads: list[Workload] = field(default_factory=list)
    daemonsets: list[DaemonSet] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    node_claims: list[NodeClaim] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    node_pools: list[NodePool] = field(default_factory=list)
    node_classes: list[ClusterAPINodeClass] = field(default_factory=list)
    machine_deployments: list[MachineDeployment] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    cluster_classes: list[ClusterClass] = field(default_factory=list)
    kubeadm_config_templates: dict[TemplateKey, KubeadmConfigTemplate] = field(default_factory=dict)
    infra_templates: dict[TemplateKey, InfrastructureMachineTemplate] = field(default_factory=dict)
    config_maps: dict[tuple[str, str], ConfigMap] = field(default_factory=dict)
    not_served: list[str] = field(default_factory=list)
    """One line per object of Karpenter's pre-v1 API read (``api.legacy``): left out, and said so."""
    parser: Parser = field(default=parse_each, repr=False)
    _read: dict[tuple[str, str, str, str], tuple[Mapping[str, Any], str]] = field(
        default_factory=dict, repr=False
    )
    """Each object read so far, by (group, kind, namespace, name): its document and where it was."""

    def pods(self) -> list[Pod]:
        """Every pod the input stands for, each once, in manifest order. A Pod listed on its own is that
        pod; a workload makes only the replicas no listed Pod already is: one it owns (directly, or
        through a ReplicaSet of a Deployment also listed) or one named as the workload would name it
        (`web-0` of StatefulSet `web`). Two workloads that would make the same pod are refused."""
        owners: dict[OwnerKey, Controller] = {
            (w.kind, w.namespace, w.name): w for w in self.workloads if not isinstance(w, Pod)
        }
        by_name: dict[tuple[str, str], OwnerKey] = {}
        for key in owners:
            by_name.setdefault(key[1:], key)
        listed = [w for w in self.workloads if isinstance(w, Pod)]
        have: dict[OwnerKey, int] = {}
        taken: dict[str, set[str]] = {}
        for pod in listed:
            taken.setdefault(pod.namespace, set()).add(pod.name)
            owner = _top_owner(pod, owners) or _namer(pod, owners, by_name)
            if owner is not None and not pod.finished:
                have[owner] = have.get(owner, 0) + 1
        out: list[Pod] = []
        made: dict[tuple[str, str], Controller] = {}
        for workload in self.workloads:
            if isinstance(workload, Pod):
                out.append(workload)
                continue
            if _top_owner(workload, owners) is not None:
                continue  # a ReplicaSet of a listed Deployment: the Deployment makes its pods
            key = (workload.kind, workload.namespace, workload.name)
            for pod in workload.pods(have.get(key, 0), taken.get(workload.namespace, set())):
                other = made.setdefault((pod.namespace, pod.name), workload)
                if other is not workload:
                    message = f"makes pod {pod.namespace}/{pod.name}, as {other.ref} does"
                    raise ManifestError(workload.ref, "", message)
                out.append(pod)
        return out

    def add(self, document: Mapping[str, Any], location: str = "") -> None:
        """File one decoded object (a `kind: List` adds each item); unknown kinds are ignored."""
        api_version, kind = document.get("apiVersion"), document.get("kind")
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            version_ok = isinstance(api_version, str) and api_version
            name, value = ("kind", kind) if version_ok else ("apiVersion", api_version)
            problem = "" if value is None else f": got {shown(value)}"
            raise ManifestError(
                _name_of(document), name, f"document has no apiVersion or kind{problem}", location
            )
        if kind == "List":
            items = document.get("items") or []
            if not isinstance(items, list):
                raise ManifestError(
                    "List", "items", f"expected a list of objects, got {shown(items)}", location
                )
            for index, item in enumerate(items):
                self.add(_mapping(item, f"{location}, item {index + 1}"), f"{location}, item {index + 1}")
            return
        if is_legacy(api_version, kind):
            # add_documents names a location "<file>, document <n>"; the command wants the file.
            file = location.rpartition(", document ")[0] or "FILE"
            self.not_served.append(not_served(kind, _name_of(document), api_version, location, file))
            return
        group, _, version = api_version.rpartition("/")
        # Providers serve their templates from infrastructure.cluster.x-k8s.io, or their own
        # infrastructure.<domain> group (the sandbox's test provider does).
        if group.startswith(INFRASTRUCTURE_GROUP_PREFIX) and kind.endswith("MachineTemplate"):
            template = self.parser(InfrastructureMachineTemplate, document, location)
            if self._first_time(group, template, document, location):
                self.infra_templates[(kind, template.namespace, template.name)] = template
            return
        entry = _KINDS.get((group, kind))
        if entry is None:
            return
        versions, model = entry
        if version not in versions:
            expected = " or ".join(f"{group}/{v}" if group else v for v in versions)
            raise ManifestError(
                f"{kind} {_name_of(document)}",
                "apiVersion",
                f"unsupported version {api_version} (expected {expected})",
                location,
            )
        obj = self.parser(model, document, location)
        if self._first_time(group, obj, document, location):
            self._file(obj)

    def _first_time(self, group: str, obj: KubeObject, document: Mapping[str, Any], location: str) -> bool:
        """Whether the object is new; an exact copy of one already read (a document listed twice) is
        merged into it, a different object under the same kind and name is refused."""
        key = (group, obj.kind, obj.namespace, obj.name)
        seen = self._read.get(key)
        if seen is None:
            self._read[key] = (document, location)
            return True
        if seen[0] != document:
            where = f" (first in {seen[1]})" if seen[1] else ""
            raise ManifestError(obj.ref, "", f"listed twice with different contents{where}", location)
        return False

    def _file(self, obj: KubeObject) -> None:
        match obj:
            case Pod() | Deployment() | Job():  # ReplicaSet and StatefulSet are Deployments
                self.workloads.append(obj)
            case DaemonSet():
                self.daemonsets.append(obj)
            case Node():
                self.nodes.append(obj)
            case NodeClaim():
                self.node_claims.append(obj)
            case PodDisruptionBudget():
                self.pdbs.append(obj)
            case Namespace():
                self.namespaces.append(obj)
            case NodePool():
                self.node_pools.append(obj)
            case ClusterAPINodeClass():
                self.node_classes.append(obj)
            case MachineDeployment():
                self.machine_deployments.append(obj)
            case Cluster():
                self.clusters.append(obj)
            case ClusterClass():
                self.cluster_classes.append(obj)
            case KubeadmConfigTemplate():
                self.kubeadm_config_templates[(obj.kind, obj.namespace, obj.name)] = obj
            case ConfigMap():
                self.config_maps[(obj.namespace, obj.name)] = obj


_KINDS: dict[tuple[str, str], tuple[tuple[str, ...], type[KubeObject]]] = {
    ("", "Pod"): (("v1",), Pod),
    ("", "Node"): (("v1",), Node),
    ("", "Namespace"): (("v1",), Namespace),
    ("", "ConfigMap"): (("v1",), ConfigMap),
    ("apps", "Deployment"): (("v1",), Deployment),
    ("apps", "ReplicaSet"): (("v1",), ReplicaSet),
    ("apps", "StatefulSet"): (("v1",), StatefulSet),
    ("apps", "DaemonSet"): (("v1",), DaemonSet),
    ("batch", "Job"): (("v1",), Job),
    ("policy", "PodDisruptionBudget"): (("v1",), PodDisruptionBudget),
    ("karpenter.sh", "NodePool"): (("v1",), NodePool),
    ("karpenter.sh", "NodeClaim"): (("v1",), NodeClaim),
    (NODECLASS_GROUP, "ClusterAPINodeClass"): (("v1alpha1",), ClusterAPINodeClass),
    (CAPI_GROUP, "MachineDeployment"): (("v1beta2",), MachineDeployment),
    (CAPI_GROUP, "Cluster"): (("v1beta2",), Cluster),
    (CAPI_GROUP, "ClusterClass"): (("v1beta2",), ClusterClass),
    # The join taints sit at the same path in both versions.
    (BOOTSTRAP_GROUP, "KubeadmConfigTemplate"): (("v1beta1", "v1beta2"), KubeadmConfigTemplate),
}


def load_manifests(paths: Sequence[Path | str]) -> Manifests:
    """Read YAML files (a directory means its *.yaml and *.yml files, sorted) into one Manifests."""
    manifests = Manifests()
    for path in _expand(Path(p) for p in paths):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ManifestError(str(path), "", f"cannot read: {error.strerror}") from None
        except UnicodeDecodeError as error:
            raise ManifestError(
                str(path),
                "",
                f"not UTF-8 text: byte 0x{error.object[error.start]:02x} at offset {error.start}",
            ) from None
        add_documents(manifests, text, str(path))
    return manifests


def load_text(text: str, source: str = "<stdin>") -> Manifests:
    """Read one YAML stream (standard input, a test's inline manifest)."""
    manifests = Manifests()
    add_documents(manifests, text, source)
    return manifests


def add_documents(manifests: Manifests, text: str, source: str) -> None:
    """Add every document of a YAML stream; empty documents are skipped."""
    index = 0
    try:
        for index, document in enumerate(load_yaml_documents(text), start=1):
            if document is not None:
                location = f"{source}, document {index}"
                manifests.add(_mapping(document, location), location)
    except yaml.YAMLError as error:
        raise ManifestError(source, "", f"document {index + 1}: invalid YAML: {one_line(error)}") from None


def _expand(paths: Iterable[Path]) -> Iterable[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        else:
            yield path


def _mapping(document: object, location: str) -> Mapping[str, Any]:
    if not isinstance(document, Mapping):
        raise ManifestError("", "", f"expected a Kubernetes object, got {type(document).__name__}", location)
    return document


def _top_owner(obj: KubeObject, owners: Mapping[OwnerKey, Controller]) -> OwnerKey | None:
    """The listed workload at the top of the object's owner references (a Pod's ReplicaSet's Deployment),
    or None when no listed workload owns it."""
    found: OwnerKey | None = None
    current: KubeObject = obj
    visited = {(obj.kind, obj.namespace, obj.name)}
    while True:
        keys = [(ref.kind, current.namespace, ref.name) for ref in current.metadata.owner_references]
        key = next((k for k in keys if k in owners and k not in visited), None)
        if key is None:
            return found
        found, current = key, owners[key]
        visited.add(key)


def _namer(
    pod: Pod, owners: Mapping[OwnerKey, Controller], by_name: Mapping[tuple[str, str], OwnerKey]
) -> OwnerKey | None:
    """The listed workload (found by namespace and name in `by_name`) that would give a pod of its own
    this name (`web` for `web-0`), if any."""
    prefix, _, index = pod.name.rpartition("-")
    # Only the names workloads make: ASCII digits without leading zeros, short enough to compare.
    if not (index.isascii() and index.isdigit() and len(index) < 19 and str(int(index)) == index):
        return None
    key = by_name.get((pod.namespace, prefix))
    return key if key is not None and int(index) < owners[key].replica_count() else None


def _name_of(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    name = metadata.get("name", "") if isinstance(metadata, Mapping) else ""
    return name if isinstance(name, str) else shown(name)
