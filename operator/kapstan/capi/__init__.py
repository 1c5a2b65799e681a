"""The CAPI provider: how the controllers launch and remove Machines (docs/architecture.md#one-seam-to-capi).

Controllers see one seam, ``CloudProvider`` in ``provider`` (docs/architecture.md#one-seam-to-capi): launch a
Machine for a NodeClaim, delete exactly that Machine, get and list the Machines kapstan has claimed. The real
implementation scales MachineDeployments (``machinedeployments``), adding a topology entry for a worker class
no pool uses yet (``topology``), and reads CAPI objects through ``contract``; ``fake`` stands in for it in
unit tests.
"""

from kapstan.capi.provider import (
    BelowMinSize,
    CloudProvider,
    CreateError,
    InsufficientCapacity,
    LaunchBlocked,
    LaunchedMachine,
    LaunchRequest,
    MachineRef,
    NotFound,
    Paused,
    ProviderError,
    RollingOut,
)

__all__ = [
    "BelowMinSize",
    "CloudProvider",
    "CreateError",
    "InsufficientCapacity",
    "LaunchBlocked",
    "LaunchRequest",
    "LaunchedMachine",
    "MachineRef",
    "NotFound",
    "Paused",
    "ProviderError",
    "RollingOut",
]
