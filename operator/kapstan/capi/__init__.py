"""The CAPI provider: the only code in kapstan that reads or writes Cluster API objects (DESIGN.md).

Controllers see one seam, ``CloudProvider`` in ``provider`` (STYLE.md habit 2): launch a Machine for a
NodeClaim, delete exactly that Machine, get and list the Machines kapstan has claimed. The real
implementation scales MachineDeployments (``machinedeployments``), adding a topology entry for a worker
class no pool uses yet (``topology``), and reads CAPI objects through ``contract``; ``fake`` stands in for
it in unit tests.
"""

from kapstan.capi.provider import (
    BelowMinSize,
    CloudProvider,
    CreateError,
    InsufficientCapacity,
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
    "LaunchRequest",
    "LaunchedMachine",
    "MachineRef",
    "NotFound",
    "Paused",
    "ProviderError",
    "RollingOut",
]
