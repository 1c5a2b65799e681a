"""Where each infrastructure provider keeps a flavor's name and size in its machine template.

Cluster API reaches providers through field paths rather than typed models (its `internal/contract`);
kapstan does the same so that a new provider needs one table row here, not a model. The CAPI contract
for scale from zero puts capacity in `status.capacity` and the node's arch and OS in `status.nodeInfo`
for every provider; the flavor name, and for some providers the size, live in provider-specific fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kapstan.api.capi import InfrastructureMachineTemplate
from kapstan.api.errors import ManifestError, shown
from kapstan.api.quantity import QuantityError, parse_quantity, to_bounded_milli

Path = tuple[str, ...]

_SPEC = ("spec", "template", "spec")

FLAVOR_PATHS: Mapping[str, Path] = {
    "OpenStackMachineTemplate": (*_SPEC, "flavor"),
    "AWSMachineTemplate": (*_SPEC, "instanceType"),
    "AzureMachineTemplate": (*_SPEC, "vmSize"),
    "GCPMachineTemplate": (*_SPEC, "instanceType"),
    "OCIMachineTemplate": (*_SPEC, "shape"),
    "HCloudMachineTemplate": (*_SPEC, "type"),
    "DOMachineTemplate": (*_SPEC, "size"),
    "IBMVPCMachineTemplate": (*_SPEC, "profile"),
    "CloudStackMachineTemplate": (*_SPEC, "offering", "name"),
    "TestMachineTemplate": (*_SPEC, "instanceType"),  # the sandbox's provider (sandbox/provider)
}
"""Kind to the field holding the flavor (instance type) name."""

SIZE_PATHS: Mapping[str, Mapping[str, tuple[Path, int]]] = {
    "VSphereMachineTemplate": {
        "cpu": ((*_SPEC, "numCPUs"), 1),
        "memory": ((*_SPEC, "memoryMiB"), 2**20),
        "ephemeral-storage": ((*_SPEC, "diskGiB"), 2**30),
    },
}
"""Kind to resource to (field, unit in bytes or cores), for providers whose template states the size
itself instead of naming a flavor."""

STATUS_CAPACITY: Path = ("status", "capacity")
STATUS_ARCH: Path = ("status", "nodeInfo", "architecture")
STATUS_OS: Path = ("status", "nodeInfo", "operatingSystem")


def read(template: InfrastructureMachineTemplate, path: Path) -> Any:
    """The value at `path` (starting at spec or status), or None when any step is missing."""
    value: Any = {"spec": template.spec, "status": template.status}
    for step in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def flavor_name(template: InfrastructureMachineTemplate) -> str | None:
    path = FLAVOR_PATHS.get(template.kind)
    value = read(template, path) if path else None
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ManifestError(template.ref, ".".join(path or ()), f"expected a flavor name, got {shown(value)}")
    return str(value)


def capacity(template: InfrastructureMachineTemplate) -> dict[str, int]:
    """The template's capacity in milli-units: `status.capacity` (the CAPI contract), else the
    provider's size fields, else nothing."""
    status = read(template, STATUS_CAPACITY)
    if isinstance(status, Mapping) and status:
        field = ".".join(STATUS_CAPACITY)
        return {str(name): _milli(template, f"{field}[{name}]", value, 1) for name, value in status.items()}
    found: dict[str, int] = {}
    for resource, (path, unit) in SIZE_PATHS.get(template.kind, {}).items():
        value = read(template, path)
        if value is not None:
            found[resource] = _milli(template, ".".join(path), value, unit)
    return found


def _milli(template: InfrastructureMachineTemplate, field: str, value: object, unit: int) -> int:
    try:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise QuantityError(f"invalid quantity {shown(value)}")
        # Bounded like every other quantity: a negative capacity would make a negative price.
        return to_bounded_milli(parse_quantity(value) * unit)
    except QuantityError as error:
        raise ManifestError(template.ref, field, str(error)) from None
