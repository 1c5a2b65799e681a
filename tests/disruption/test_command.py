"""The command recorded on NodeClaims reads back as it was written; anything else is not ours."""

from __future__ import annotations

from kapstan.controllers.disruption.command import Command


def test_a_command_round_trips() -> None:
    command = Command(
        id="ab12",
        reason="underutilized",
        kind="replace",
        candidates=("pool-a",),
        replacements=("pool-x1", "pool-x2"),
        started="2026-11-30T10:00:00Z",
        saving=0.1,
        detail={"removed": ["pool-a (c3-16)"]},
    )
    assert Command.decode(command.encode()) == command


def test_garbage_is_not_a_command() -> None:
    assert Command.decode("not json") is None
    assert Command.decode('{"id": "x"}') is None
    assert Command.decode("[1, 2]") is None
