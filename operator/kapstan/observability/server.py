"""The operator's HTTP endpoint: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz`` for the kubelet.

Three fixed GET routes do not justify a web framework, so this is a small HTTP/1.1 responder on
``asyncio.start_server``, running on the operator's own event loop. That is the point of ``/healthz``: it
answers only while the loop is turning, so a wedged loop (a blocking call, a busy solver holding the GIL
in a coroutine) fails the liveness probe and the kubelet restarts the pod. Each response closes its
connection; scrapers and probes reconnect, and we never have to manage idle keep-alive sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kapstan.observability.metrics import REGISTRY

log = logging.getLogger(__name__)

# A probe or scrape request is a request line and a few headers; anything slower or larger is not one.
REQUEST_TIMEOUT = 10.0
MAX_REQUEST_HEAD = 16 * 1024

_TEXT = "text/plain; charset=utf-8"
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
_ROUTES = ("/metrics", "/healthz", "/readyz")


async def serve(host: str, port: int, ready: Callable[[], bool]) -> asyncio.Server:
    """Start serving on ``host:port`` (0 picks a free port, see ``bound_port``) and return the server.

    ``ready`` is called for every ``/readyz``; it must be quick and must not block (it runs on the loop).
    Close the server with ``server.close(); await server.wait_closed()``.
    """

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _handle(reader, writer, ready)

    server = await asyncio.start_server(handle, host, port, limit=MAX_REQUEST_HEAD)
    log.info("serving /metrics, /healthz and /readyz", extra={"address": f"{host}:{bound_port(server)}"})
    return server


def bound_port(server: asyncio.Server) -> int:
    """The port ``server`` listens on, for a server started on port 0."""
    port: int = server.sockets[0].getsockname()[1]
    return port


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ready: Callable[[], bool]
) -> None:
    try:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
        except TimeoutError:
            await _respond(writer, 408, "request timed out\n")
            return
        except asyncio.LimitOverrunError:
            await _respond(writer, 431, "request head too large\n")
            return
        except asyncio.IncompleteReadError:
            return  # the client went away before finishing its request
        status, content_type, body = _route(head, ready)
        await _respond(writer, status, body, content_type, head_only=head.startswith(b"HEAD "))
    except ConnectionError:
        log.debug("client hung up before the response was written")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def _route(head: bytes, ready: Callable[[], bool]) -> tuple[int, str, str | bytes]:
    request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return 400, _TEXT, "malformed request line\n"
    method, target, _ = parts
    path = target.split("?", 1)[0]
    if path not in _ROUTES:
        return 404, _TEXT, "not found\n"
    if method not in ("GET", "HEAD"):
        return 405, _TEXT, "only GET and HEAD\n"
    if path == "/metrics":
        return 200, CONTENT_TYPE_LATEST, generate_latest(REGISTRY)
    if path == "/healthz":
        return 200, _TEXT, "ok\n"
    try:
        is_ready = ready()
    except Exception as error:
        # A readiness check that breaks means not ready, and the probe's body says why.
        log.warning("readiness check failed", exc_info=True)
        return 503, _TEXT, f"not ready: {type(error).__name__}: {error}\n"
    return (200, _TEXT, "ok\n") if is_ready else (503, _TEXT, "not ready\n")


async def _respond(
    writer: asyncio.StreamWriter,
    status: int,
    body: str | bytes,
    content_type: str = _TEXT,
    *,
    head_only: bool = False,
) -> None:
    payload = body.encode() if isinstance(body, str) else body
    headers = [
        f"HTTP/1.1 {status} {_REASONS[status]}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(payload)}",
        "Connection: close",
    ]
    if status == 405:
        headers.append("Allow: GET, HEAD")
    writer.write(("\r\n".join(headers) + "\r\n\r\n").encode("latin-1"))
    if not head_only:
        writer.write(payload)
    await writer.drain()
