"""Runs mutated manifests through `simulate`'s own code path on both engines and sorts the outcomes.

Each input runs in a worker process, so a hang is a timeout the parent sees (even inside the Rust
engine, which holds no Python signal handler) and a crash of the interpreter loses one input, not the
run. The worker calls `kapstan.cli.simulate_files` exactly as the CLI does, then solves the same
snapshot on the other engine.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from kapstan.api.errors import ManifestError
from kapstan.cli import simulate_files
from kapstan.scheduling import solve
from kapstan.scheduling.model import Plan
from kapstan.scheduling.validator import validate

MAX_ERROR_LINE = 2_000
"""A rejection longer than this is no longer the one readable line the CLI promises."""

REJECTED = "rejected"
PLANNED = "planned"
FAILURES = ("crash", "hang", "disagreement", "invalid-plan", "unclean-error")


@dataclass(frozen=True)
class Outcome:
    kind: str
    """REJECTED, PLANNED, or one of FAILURES."""
    detail: str = ""


def comparable(plan: Plan) -> dict[str, object]:
    out = plan.to_json()
    del out["engine"], out["solveSeconds"]
    out["labels"] = [sorted(c.labels.items()) for c in plan.node_claims]
    return out


def clean_rejection(error: ManifestError) -> str | None:
    """Why the error breaks the CLI's one-line rule, or None when it keeps it."""
    line = f"error: {error}"
    if not (error.obj or error.field or error.location):
        return "names neither an object, a field nor a place in the file"
    if len(line) > MAX_ERROR_LINE:
        return f"{len(line)} characters long"
    if any(ord(c) < 32 or 127 <= ord(c) < 160 or c in "\u2028\u2029" for c in line):
        return "contains a control character"
    return None


def run_one(data: bytes, workdir: Path) -> Outcome:
    """One input through both engines: a clean rejection, or two equal plans the validator accepts."""
    manifest = workdir / "input.yaml"
    manifest.write_bytes(data)
    try:
        snapshot, python_plan = simulate_files([manifest], "python")
        rust_plan = solve(snapshot, "rust")
    except ManifestError as error:
        problem = clean_rejection(error)
        return (
            Outcome("unclean-error", f"{problem}: {error!s:.500}")
            if problem
            else Outcome(REJECTED, str(error))
        )
    except Exception:  # everything else the CLI would show as a traceback
        return Outcome("crash", traceback.format_exc(limit=8))
    if comparable(python_plan) != comparable(rust_plan):
        return Outcome("disagreement", f"python {comparable(python_plan)}\nrust   {comparable(rust_plan)}")
    violations = validate(snapshot, python_plan)
    if violations:
        return Outcome("invalid-plan", "\n".join(violations[:5]))
    return Outcome(PLANNED)


def _worker(connection: Connection) -> None:
    with tempfile.TemporaryDirectory(prefix="kapstan-fuzz-") as workdir:
        while True:
            data = connection.recv_bytes()
            connection.send(run_one(data, Path(workdir)))


class Runner:
    """A worker process that runs inputs one at a time and is replaced when one hangs or kills it."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._context = multiprocessing.get_context("spawn")
        self._start()

    def _start(self) -> None:
        self._connection, child = self._context.Pipe()
        self._process = self._context.Process(target=_worker, args=(child,), daemon=True)
        self._process.start()
        child.close()

    def run(self, data: bytes) -> Outcome:
        self._connection.send_bytes(data)
        try:
            if self._connection.poll(self.timeout):
                outcome: Outcome = self._connection.recv()
                return outcome
            outcome = Outcome("hang", f"no answer within {self.timeout} s")
        except EOFError:
            outcome = Outcome("crash", f"the worker died (exit code {self._process.exitcode})")
        self.close()
        self._start()
        return outcome

    def close(self) -> None:
        self._process.kill()
        self._process.join()
        self._connection.close()
