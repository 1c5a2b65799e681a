"""The sandbox: a real Kubernetes control plane and Cluster API on one machine, for tests and the demo.

``build`` compiles the binaries from Go modules into a cache, ``sandbox`` runs them, ``fixture`` offers
them to pytest. Nothing here is used by ``kapstan run``.
"""

from kapstan.local.build import Artifacts, BuildError, build
from kapstan.local.procs import SandboxError
from kapstan.local.sandbox import Sandbox, default_dir, running

__all__ = ["Artifacts", "BuildError", "Sandbox", "SandboxError", "build", "default_dir", "running"]
