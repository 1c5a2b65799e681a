"""``karpenter.sh/v1alpha5`` Provisioners (and their provider settings) to ``karpenter.sh/v1`` NodePools
and ``ClusterAPINodeClass``es, each field mapped as Karpenter's v1beta1 and v1 migration guides map it,
and a note for every field that changes shape or has no v1 equivalent on Cluster API.

The mapping (Karpenter's "Provisioner -> NodePool" table, then v1's moves):

- ``labels``, ``annotations`` -> ``template.metadata``; ``taints``, ``startupTaints``, ``requirements`` ->
  ``template.spec`` (``karpenter.sh/provisioner-name`` becomes ``karpenter.sh/nodepool``);
  ``limits.resources`` -> ``limits``; ``weight`` stays.
- ``ttlSecondsAfterEmpty: N`` -> ``disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Ns}``;
  ``consolidation.enabled: true`` -> ``WhenEmptyOrUnderutilized`` (after ``0s``, v1alpha5's behaviour);
  neither -> ``consolidateAfter: Never``: v1alpha5 removed no node then, and v1's default would.
- ``ttlSecondsUntilExpired: N`` -> ``template.spec.expireAfter: Ns``; absent -> ``Never`` (v1's default
  is 720h, v1alpha5's was never).
- ``providerRef`` / ``provider`` -> ``nodeClassRef`` to a ClusterAPINodeClass; the AWS settings have no
  Cluster API equivalent (the infrastructure machine template holds them), so each is a note.
- ``kubeletConfiguration``: ``kubeReserved``, ``systemReserved`` and ``evictionHard`` move to the
  NodeClass's ``kubelet`` (v1 moved kubelet settings to the NodeClass too); the rest is a note pointing
  to the bootstrap template.

Pure: documents in, documents with their notes out (``cli_convert`` prints them as YAML).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND
from kapstan.api.legacy import LEGACY_API_VERSION, PROVIDER_API_VERSION
from kapstan.api.wellknown import NODEPOOL

Document = dict[str, Any]

PROVISIONER_NAME_LABEL = "karpenter.sh/provisioner-name"
NODECLASS_API_VERSION = f"{NODECLASS_GROUP}/v1alpha1"
DEFAULT_NODECLASS = "default"
KUBELET_MOVED = ("kubeReserved", "systemReserved", "evictionHard")
"""The kubelet settings ClusterAPINodeClass carries (they decide allocatable, so the catalog needs them)."""
_KEPT_METADATA = ("name", "labels", "annotations")
_TO_TEMPLATE_META = ("labels", "annotations")
_TO_TEMPLATE_SPEC = ("taints", "startupTaints")
_HANDLED = frozenset(
    {
        *_TO_TEMPLATE_META,
        *_TO_TEMPLATE_SPEC,
        "requirements",
        "limits",
        "weight",
        "ttlSecondsAfterEmpty",
        "ttlSecondsUntilExpired",
        "consolidation",
        "providerRef",
        "provider",
        "kubeletConfiguration",
    }
)
_HINTS = {
    "ttlSeconds": "if it means ttlSecondsAfterEmpty (remove a node that has had no pods for that long), "
    "set spec.disruption to consolidationPolicy: WhenEmpty and consolidateAfter to that many seconds",
}


@dataclass
class Converted:
    """One output document and the notes that go above it as YAML comments."""

    document: Document
    notes: list[str] = field(default_factory=list)
    source: str = ""
    """What it was converted from, for the header comment; empty for a document passed through."""


def convert(documents: Sequence[Mapping[str, Any]]) -> list[Converted]:
    """Provisioners become NodePools (in input order), each NodeClass they refer to follows once, Machines
    are dropped with a note, and every other document passes through unchanged."""
    templates = {
        str(d.get("metadata", {}).get("name", "")): d
        for d in documents
        if d.get("apiVersion") == PROVIDER_API_VERSION and d.get("kind") == "AWSNodeTemplate"
    }
    out: list[Converted] = []
    classes: dict[str, Converted] = {}
    for document in documents:
        api_version, kind = document.get("apiVersion"), document.get("kind")
        name = str(document.get("metadata", {}).get("name", ""))
        if api_version == LEGACY_API_VERSION and kind == "Provisioner":
            out.append(_provisioner(document, templates, classes))
        elif api_version == LEGACY_API_VERSION and kind == "Machine":
            note = (
                f"Machine {name}: left out; kapstan creates its own NodeClaims for the pods that need nodes"
            )
            out.append(Converted({}, [note], f"{LEGACY_API_VERSION} Machine {name}"))
        elif api_version == PROVIDER_API_VERSION:
            continue  # folded into the NodeClass of the Provisioners that refer to it
        else:
            out.append(Converted(dict(document)))
    return [*out, *classes.values()]


def _provisioner(
    provisioner: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]], classes: dict[str, Converted]
) -> Converted:
    spec: Mapping[str, Any] = provisioner.get("spec") or {}
    meta = provisioner.get("metadata") or {}
    name = str(meta.get("name", ""))
    notes: list[str] = []
    template_meta = {key: spec[key] for key in _TO_TEMPLATE_META if spec.get(key)}
    template_spec: Document = {key: spec[key] for key in _TO_TEMPLATE_SPEC if spec.get(key)}
    if spec.get("requirements"):
        template_spec["requirements"] = [_requirement(r, notes) for r in spec["requirements"]]
    class_name = _node_class(name, spec, templates, classes, notes)
    template_spec["nodeClassRef"] = {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": class_name}
    template_spec["expireAfter"] = _expire_after(spec, notes)
    pool_spec: Document = {"template": {"spec": template_spec}}
    if template_meta:
        pool_spec["template"] = {"metadata": template_meta, "spec": template_spec}
    pool_spec["disruption"] = _disruption(spec, notes)
    limits = (spec.get("limits") or {}).get("resources")
    if limits:
        pool_spec["limits"] = dict(limits)
    if spec.get("weight") is not None:
        pool_spec["weight"] = spec["weight"]
    for key in spec:
        if key not in _HANDLED:
            hint = f"; {_HINTS[key]}" if key in _HINTS else ""
            notes.append(
                f"spec.{key}: {_shown(spec[key])} is not a v1alpha5 Provisioner field: left out{hint}"
            )
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {key: meta[key] for key in _KEPT_METADATA if meta.get(key)},
        "spec": pool_spec,
    }
    return Converted(pool, notes, f"{LEGACY_API_VERSION} Provisioner {name}")


def _requirement(requirement: Mapping[str, Any], notes: list[str]) -> Document:
    converted = dict(requirement)
    if converted.get("key") == PROVISIONER_NAME_LABEL:
        converted["key"] = NODEPOOL
        notes.append(f"requirement on {PROVISIONER_NAME_LABEL} -> {NODEPOOL} (the label was renamed)")
    elif str(converted.get("key", "")).startswith("karpenter.k8s.aws/"):
        notes.append(
            f"requirement on {converted['key']}: an AWS label; kapstan's flavors carry it only if their "
            "MachineDeployment's capacity.cluster-autoscaler.kubernetes.io/labels annotation sets it"
        )
    return converted


def _disruption(spec: Mapping[str, Any], notes: list[str]) -> Document:
    empty_after = spec.get("ttlSecondsAfterEmpty")
    consolidation = bool((spec.get("consolidation") or {}).get("enabled"))
    if consolidation:
        if empty_after is not None:
            notes.append(
                f"spec.ttlSecondsAfterEmpty: {empty_after} dropped: v1alpha5 allowed it only without "
                "consolidation, which already removes empty nodes"
            )
        notes.append("spec.consolidation.enabled: true -> consolidationPolicy: WhenEmptyOrUnderutilized")
        return {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    if empty_after is not None:
        notes.append(
            f"spec.ttlSecondsAfterEmpty: {empty_after} -> consolidationPolicy: WhenEmpty, "
            f"consolidateAfter: {empty_after}s"
        )
        return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": f"{empty_after}s"}
    notes.append(
        "no ttlSecondsAfterEmpty nor consolidation: v1alpha5 removed no node, so consolidateAfter: Never "
        "(v1's default would consolidate)"
    )
    return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}


def _expire_after(spec: Mapping[str, Any], notes: list[str]) -> str:
    seconds = spec.get("ttlSecondsUntilExpired")
    if seconds is None:
        notes.append(
            "no ttlSecondsUntilExpired: nodes never expired, so expireAfter: Never (v1's default is 720h)"
        )
        return "Never"
    notes.append(f"spec.ttlSecondsUntilExpired: {seconds} -> spec.template.spec.expireAfter: {seconds}s")
    return f"{seconds}s"


def _node_class(
    provisioner: str,
    spec: Mapping[str, Any],
    templates: Mapping[str, Mapping[str, Any]],
    classes: dict[str, Converted],
    notes: list[str],
) -> str:
    """The NodeClass the pool refers to, created (or shared) in ``classes``; its name is the providerRef's,
    the Provisioner's for inline provider settings, or ``default``."""
    ref = spec.get("providerRef") or {}
    name = str(ref.get("name") or (provisioner if spec.get("provider") else DEFAULT_NODECLASS))
    kubelet, kubelet_notes = _kubelet(spec.get("kubeletConfiguration") or {})
    notes += kubelet_notes
    existing = classes.get(name)
    if existing is not None and existing.document["spec"].get("kubelet") != (kubelet or None):
        name = f"{name}-{provisioner}"  # another Provisioner reserves differently on this provider: split
        existing = classes.get(name)
    if existing is not None:
        return name
    class_notes: list[str] = []
    source = f"{LEGACY_API_VERSION} Provisioner {provisioner}"
    if spec.get("provider"):
        class_notes += _provider_notes(f"Provisioner {provisioner} spec.provider", spec["provider"])
    elif ref.get("name"):
        template = templates.get(str(ref["name"]))
        if template is None:
            class_notes.append(f"providerRef {ref['name']}: not in the input, so its settings are not known")
        else:
            source = f"{PROVIDER_API_VERSION} AWSNodeTemplate {ref['name']}"
            class_notes += _provider_notes(f"AWSNodeTemplate {ref['name']} spec", template.get("spec") or {})
    node_class: Document = {
        "apiVersion": NODECLASS_API_VERSION,
        "kind": NODECLASS_KIND,
        "metadata": {"name": name},
        "spec": {"kubelet": kubelet} if kubelet else {},
    }
    classes[name] = Converted(node_class, class_notes, source)
    return name


def _kubelet(config: Mapping[str, Any]) -> tuple[Document, list[str]]:
    kept = {key: config[key] for key in KUBELET_MOVED if config.get(key)}
    notes = [f"kubeletConfiguration.{key} -> ClusterAPINodeClass spec.kubelet.{key}" for key in kept] + [
        f"kubeletConfiguration.{key}: {_shown(value)} has no ClusterAPINodeClass equivalent: set it in the "
        "KubeadmConfigTemplate (joinConfiguration.nodeRegistration.kubeletExtraArgs)"
        + (
            " and the MD's capacity.cluster-autoscaler.kubernetes.io/maxPods annotation"
            if key == "maxPods"
            else ""
        )
        for key, value in config.items()
        if key not in KUBELET_MOVED
    ]
    return kept, notes


def _provider_notes(where: str, settings: Mapping[str, Any]) -> list[str]:
    return [
        f"{where}.{key}: {_shown(value)} has no Cluster API equivalent: the MachineDeployment's "
        "infrastructure machine template holds the machine's image, network and disks"
        for key, value in settings.items()
    ]


def _shown(value: Any) -> str:
    text = (repr(value) if not isinstance(value, str) else value).replace("\n", " ")
    return text if len(text) <= 80 else text[:77] + "..."
