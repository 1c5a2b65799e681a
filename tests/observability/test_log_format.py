"""Log lines: JSON with the fixed fields, extra fields and the error; text for terminals; levels checked."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from datetime import datetime

import pytest

from kapstan.observability.logging import configure, parse_level


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    httpx_level = logging.getLogger("httpx").level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("httpx").setLevel(httpx_level)


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    captured = capsys.readouterr()
    assert captured.out == "", "logs go to stderr only"
    return captured.err.splitlines()


def test_json_lines_carry_fixed_and_extra_fields(capsys: pytest.CaptureFixture[str]) -> None:
    configure("info")
    log = logging.getLogger("kapstan.controllers.provisioner")
    log.info("launched %s", "default-abc", extra={"nodeclaim": "default-abc", "pods": 3, "zone": None})
    log.debug("not shown at info")

    [line] = _lines(capsys)
    record = json.loads(line)
    assert record == {
        "time": record["time"],
        "level": "INFO",
        "logger": "kapstan.controllers.provisioner",
        "message": "launched default-abc",
        "nodeclaim": "default-abc",
        "pods": 3,
        "zone": None,
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["time"])
    datetime.fromisoformat(record["time"])


def test_json_error_field_holds_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    configure("WARNING", "json")
    log = logging.getLogger("kapstan.capi")
    try:
        raise RuntimeError("scale refused")
    except RuntimeError:
        log.exception("scaling md-1", extra={"machineDeployment": "md-1"})
    log.info("below warning")

    [line] = _lines(capsys)
    record = json.loads(line)
    assert record["level"] == "ERROR"
    assert record["message"] == "scaling md-1"
    assert record["machineDeployment"] == "md-1"
    assert record["error"].startswith("Traceback (most recent call last):")
    assert record["error"].endswith("RuntimeError: scale refused")


def test_extra_fields_cannot_overwrite_the_fixed_ones(capsys: pytest.CaptureFixture[str]) -> None:
    configure("info")
    extra = {"time": "yesterday", "level": "nope", "logger": "other", "error": "quota exceeded"}
    logging.getLogger("kapstan.capi").warning("scale refused", extra=extra)
    record = json.loads(_lines(capsys)[0])
    assert (record["level"], record["logger"]) == ("WARNING", "kapstan.capi")
    assert record["time"] != "yesterday"
    assert record["error"] == "quota exceeded", "an error passed as a field is kept"


def test_values_json_cannot_encode_are_written_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    class Flavor:
        def __str__(self) -> str:
            return "c3-8"

    configure("debug")
    logging.getLogger("kapstan.catalog").debug("chosen", extra={"flavor": Flavor(), "zones": {"a", "b"}})
    record = json.loads(_lines(capsys)[0])
    assert record["flavor"] == "c3-8"
    assert record["message"] == "chosen"


def test_configure_twice_replaces_the_handler(capsys: pytest.CaptureFixture[str]) -> None:
    configure("info", "json")
    configure("info", "text")
    logging.getLogger("kapstan").info("once", extra={"nodepool": "default"})
    [line] = _lines(capsys)
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO kapstan: once nodepool=default", line
    ), line


def test_text_format_appends_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    configure("error", "text")
    try:
        raise KeyError("missing")
    except KeyError:
        logging.getLogger("kapstan.kube").error("lookup", exc_info=True)
    lines = _lines(capsys)
    assert lines[0].endswith("ERROR kapstan.kube: lookup")
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "KeyError: 'missing'"


def test_http_client_request_lines_are_quiet_unless_debugging(capsys: pytest.CaptureFixture[str]) -> None:
    configure("info")
    logging.getLogger("httpx").info('HTTP Request: GET https://api/ "HTTP/1.1 200 OK"')
    assert _lines(capsys) == []
    configure("debug")
    logging.getLogger("httpx").info('HTTP Request: GET https://api/ "HTTP/1.1 200 OK"')
    assert len(_lines(capsys)) == 1


def test_level_names_are_validated() -> None:
    assert parse_level(" Debug ") == logging.DEBUG
    assert parse_level("CRITICAL") == logging.CRITICAL
    with pytest.raises(
        ValueError, match=r"unknown log level 'verbose': expected one of debug, info, warning"
    ):
        configure("verbose")
    with pytest.raises(ValueError, match="unknown log level '10'"):
        configure("10")
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        configure("info", "xml")  # type: ignore[arg-type]
