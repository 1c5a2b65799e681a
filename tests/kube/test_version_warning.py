"""kr8s's "Kubernetes version ... is not supported" warning is not shown where kapstan connects; other
warnings are. The API server is a local HTTP server answering ``/version`` with the version under test."""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from kapstan.kube.client import Client


def _server(git_version: str) -> ThreadingHTTPServer:
    class Version(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"major": "1", "minor": "99", "gitVersion": git_version}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", 0), Version)


@pytest.fixture
def kubeconfig_for(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    servers: list[ThreadingHTTPServer] = []

    def make(git_version: str) -> Path:
        server = _server(git_version)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        path = tmp_path / f"kubeconfig-{len(servers)}"
        url = f"http://127.0.0.1:{server.server_address[1]}"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "c", "cluster": {"server": url}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        return path

    yield make
    for server in servers:
        server.shutdown()


def _warnings_connecting(kubeconfig: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(Client.connect(str(kubeconfig)))
    return [str(w.message) for w in caught]


def test_an_unsupported_server_version_is_not_warned_about(kubeconfig_for: Callable[[str], Path]) -> None:
    shown = _warnings_connecting(kubeconfig_for("v1.99.3"))
    assert not [text for text in shown if "is not supported" in text], shown


def test_other_kr8s_warnings_still_show(kubeconfig_for: Callable[[str], Path]) -> None:
    shown = _warnings_connecting(kubeconfig_for("not-a-version"))
    assert any(text.startswith("Unable to parse Kubernetes version not-a-version") for text in shown), shown
