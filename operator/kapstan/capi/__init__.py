"""The CAPI provider: how the controllers launch, find and remove Machines (docs/architecture.md#one-seam-to-capi).

Controllers see one seam, ``CloudProvider`` in ``provider``: launch a Machine for a NodeClaim, delete
exactly that Machine, find the Machines of a claim or a providerID, tell whether one drifted, see an MD's
state and point it at a bootstrap template with the unregistered taint. The real implementation scales
MachineDeployments (``machinedeployments``; launches on one MD coalesced in ``launches``, the fresh reads
and conditional writes both paths share in ``mdapi``), adding a topology entry for a worker class no pool uses yet
(``topology``); it answers reads from the management informers of ``cache`` (``reads``) and writes template
revisions (``revisions``, ``bootstrap``); every CAPI field it touches is read through ``contract``.
``fake`` stands in for it in the controllers' unit tests. Only this package touches CAPI objects (an
import-linter contract in pyproject.toml holds the controllers to that).
"""

# The seam's names are listed once, in ``provider.__all__``; a star import re-exports exactly those.
from kapstan.capi.provider import *  # noqa: F403
from kapstan.capi.provider import __all__ as __all__
