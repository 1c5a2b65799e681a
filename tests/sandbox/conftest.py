"""Tests of the local sandbox: a real API server, scheduler, kwok and Cluster API.

Every test here is marked ``sandbox`` (select with ``-m sandbox``, deselect with ``-m "not sandbox"``).
They build what they need on first use; ``KAPSTAN_SKIP_SANDBOX=1`` skips them. Their fixtures are in
``tests/sandbox_fixture.py``, imported by ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.sandbox)
