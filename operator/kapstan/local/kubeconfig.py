"""Kubeconfig files for the sandbox's API servers.

Credentials are embedded (``*-data``) rather than referenced by path, so a kubeconfig can be copied
into a Secret (Cluster API's ``<cluster>-kubeconfig``) or another machine's shell and still work.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write(path: Path, server: str, pki: Path, name: str = "kapstan-local") -> None:
    """Write an admin kubeconfig for ``server`` using the sandbox PKI in ``pki``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": _b64(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": _b64(pki / "admin.crt"),
                    "client-key-data": _b64(pki / "admin.key"),
                },
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
