"""The CAPI provider: how the controllers launch, find and remove Machines (docs/architecture.md#one-seam-to-capi).

Controllers see one seam, ``CloudProvider`` in ``provider``: launch a Machine for a NodeClaim, delete
exactly that Machine, find the Machines of a claim or a providerID, tell whether one drifted, see an MD's
state and point it at a bootstrap template with the unregistered taint. The real implementation scales
MachineDeployments (``machinedeployments``), adding a topology entry for a worker class no pool uses yet
(``topology``); it answers reads from the management informers of ``cache`` (``reads``) and writes template
revisions (``revisions``, ``bootstrap``); every CAPI field it touches is read through ``contract``.
``fake`` stands in for it in the controllers' unit tests. Only this package touches CAPI objects (an
import-linter contract in pyproject.toml holds the controllers to that).
"""

from kapstan.capi.provider import (
    BelowMinSize,
    CloudProvider,
    Conflict,
    CreateError,
    InsufficientCapacity,
    LaunchBlocked,
    LaunchedMachine,
    LaunchRequest,
    MachineDeploymentInfo,
    MachineDeploymentRef,
    MachineRef,
    NotFound,
    Paused,
    ProviderError,
    RegistrationTaint,
    RollingOut,
    TemplateRevision,
)

__all__ = [
    "BelowMinSize",
    "CloudProvider",
    "Conflict",
    "CreateError",
    "InsufficientCapacity",
    "LaunchBlocked",
    "LaunchRequest",
    "LaunchedMachine",
    "MachineDeploymentInfo",
    "MachineDeploymentRef",
    "MachineRef",
    "NotFound",
    "Paused",
    "ProviderError",
    "RegistrationTaint",
    "RollingOut",
    "TemplateRevision",
]
