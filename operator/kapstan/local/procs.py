"""Starting, watching and stopping the sandbox's processes.

Every process runs in its own session (so a Ctrl-C to the terminal does not reach it half-way through
a test, and its children die with it), logs to ``DIR/logs/<name>.log``, and is recorded in
``DIR/pids/<name>`` so that ``kapstan local down`` in another shell can stop exactly what ``up`` started
and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path


class SandboxError(RuntimeError):
    """A sandbox process failed to start or to become ready; the message points at its log."""


_PORTS = range(20000, 32000)
"""Below Linux's default ephemeral range (32768-60999): the kernel never hands these to outgoing
connections, of which a test session makes thousands, so a port picked here is not taken by a client
socket between the pick and the component's bind."""
_handed_out: set[int] = set()


def free_port() -> int:
    """A TCP port free on every interface right now, never handed out before by this process (the
    caller binds it soon after)."""
    rng = random.Random()
    for _ in range(200):
        port = rng.choice(_PORTS)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise SandboxError(f"no free TCP port in {_PORTS.start}-{_PORTS.stop - 1}")


def start(directory: Path, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> int:
    """Start ``argv`` in the background as component ``name``; returns its pid."""
    logs = directory / "logs"
    pids = directory / "pids"
    logs.mkdir(parents=True, exist_ok=True)
    pids.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    (pids / name).write_text(f"{proc.pid}\n{' '.join(argv[:2])}\n")
    return proc.pid


def alive(pid: int) -> bool:
    try:
        # Reap it if it is our exited child, so that a zombie does not count as alive.
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return False
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recorded(directory: Path) -> dict[str, int]:
    """Components recorded in ``DIR/pids`` with their pids."""
    pids = directory / "pids"
    if not pids.is_dir():
        return {}
    return {p.name: int(p.read_text().split()[0]) for p in sorted(pids.iterdir())}


def log_tail(directory: Path, name: str, lines: int = 25) -> str:
    path = directory / "logs" / f"{name}.log"
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def wait_until(
    directory: Path, name: str, pid: int, ready: Callable[[], bool], timeout: float = 120.0
) -> None:
    """Poll ``ready`` until it holds; fail early, with the log's tail, if the process exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            raise SandboxError(f"{name} exited during start-up:\n{log_tail(directory, name)}")
        try:
            if ready():
                return
        except Exception:  # not up yet: connection refused, 503, missing file...
            pass
        time.sleep(0.2)
    raise SandboxError(f"{name} not ready after {timeout:.0f}s:\n{log_tail(directory, name)}")


def _session_pids(sid: int) -> list[int]:
    """Processes of a session (the component and anything it spawned), read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp, session.
        if int(fields[3]) == sid:
            found.append(int(entry))
    return found


def stop(directory: Path, name: str, pid: int, grace: float = 10.0) -> None:
    """SIGTERM the component's session, SIGKILL what is left after ``grace`` seconds, forget the pid.

    A pid is only signalled while it still leads the session we created for it; a recycled pid
    belonging to some other program is left alone.
    """
    members = [p for p in _session_pids(pid)] if _leads_session(pid) else []
    for p in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in members):
        time.sleep(0.1)
    for p in members:
        if alive(p):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
    for p in members:
        while alive(p) and time.monotonic() < deadline + 5:
            time.sleep(0.05)
    with contextlib.suppress(FileNotFoundError):
        (directory / "pids" / name).unlink()


def _leads_session(pid: int) -> bool:
    try:
        return os.getsid(pid) == pid
    except ProcessLookupError:
        return False
