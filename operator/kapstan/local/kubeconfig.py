"""Kubeconfig files for the sandbox's API servers.

Credentials are embedded (``*-data``) rather than referenced by path, so a kubeconfig can be copied
into a Secret (Cluster API's ``<cluster>-kubeconfig``) or another machine's shell and still work.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write(path: Path, server: str, pki: Path, name: str = "kapstan-local", token: str | None = None) -> None:
    """Write a kubeconfig for ``server``: admin (client certificate) or, given ``token``, a bearer token."""
    user: dict[str, str] = (
        {"token": token}
        if token
        else {"client-certificate-data": _b64(pki / "admin.crt"), "client-key-data": _b64(pki / "admin.key")}
    )
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": _b64(pki / "ca.crt")},
            }
        ],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "user"}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


def _admin_request(server: str, pki: Path, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    req = urllib.request.Request(
        f"{server}{path}",
        data=json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
        result: dict[str, Any] = json.loads(resp.read())
        return result


def service_account_token(server: str, pki: Path, namespace: str, name: str, seconds: int = 3600) -> str:
    """Create the ServiceAccount if needed and mint a token for it (TokenRequest), as admin."""
    try:
        _admin_request(
            server,
            pki,
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            {"metadata": {"name": name}},
        )
    except urllib.error.HTTPError as err:
        if err.code != 409:  # already exists
            raise
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    result = _admin_request(
        server, pki, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", request
    )
    token: str = result["status"]["token"]
    return token
