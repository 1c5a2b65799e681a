"""The API client's session against kr8s's credential reloads: kr8s reloads the kubeconfig on a 401 or 403
(a restarted API server answers 403 to a ServiceAccount for a moment), emptying the server while it reads
the file; a session made by another request meanwhile must still get the server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from kapstan.kube.client import _PooledApi

SERVER = "https://127.0.0.1:6443"


def _kubeconfig(path: Path) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": SERVER, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "a-service-account-token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_session_made_during_a_credentials_reload_has_the_server(tmp_path: Path) -> None:
    async def main() -> tuple[str, str]:
        # The API object as Client.connect makes it, without asking a server for its version.
        api = _PooledApi(kubeconfig=str(_kubeconfig(tmp_path / "kubeconfig")), bypass_factory=True)
        await api.auth
        load = api.auth._load_kubeconfig

        async def slow_load() -> None:  # the file read a reload awaits, made long enough to overlap
            await asyncio.sleep(0.05)
            await load()

        api.auth._load_kubeconfig = slow_load
        reloading = asyncio.ensure_future(api.auth.reauthenticate())
        await asyncio.sleep(0.01)
        emptied = api.auth.server
        await api._create_session()  # another request's session, made while the reload reads the file
        await reloading
        assert api._session is not None
        return emptied, str(api._session.base_url)

    emptied, base = asyncio.run(main())
    assert emptied == "", "the reload empties the server while it reads the kubeconfig"
    assert base.rstrip("/") == SERVER, "a session without a server fails every request after it"
