"""install/grafana-dashboard.json queries only what kapstan exports: every metric name in every PromQL
expression (panels and template variables) is a series of ``metrics.REGISTRY``, and every label it
selects or groups by is one of that metric's labels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.metrics import MetricWrapperBase

from kapstan.observability import metrics

DASHBOARD = Path(__file__).parents[2] / "install" / "grafana-dashboard.json"

# PromQL words that look like identifiers but name no series.
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_RANGE = re.compile(r"\[[^\]]*\]")
_MATCHERS = re.compile(r"\{([^}]*)\}")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "info": ("_info",),
}


def _exported() -> dict[str, tuple[str, set[str]]]:
    """Every series name ``/metrics`` can show, to its metric's name and the label names it carries."""
    series: dict[str, tuple[str, set[str]]] = {}
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase) and value in metrics.REGISTRY._collector_to_names:
            # The declared labels: prometheus_client has no public view of them.
            labels = set(value._labelnames)
            for suffix in _SUFFIXES[value._type]:
                series[value._name + suffix] = (
                    value._name,
                    labels | ({"le"} if suffix == "_bucket" else set()),
                )
    return series


def _expressions(node: Any) -> Iterator[str]:
    """The PromQL of every target, and of every query variable (``label_values(metric, label)``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                yield value
            else:
                yield from _expressions(value)
    elif isinstance(node, list):
        for item in node:
            yield from _expressions(item)


def references(expr: str) -> tuple[list[str], list[str]]:
    """The series names and the label names ``expr`` refers to."""
    text = _STRING.sub('""', expr)
    text = _RANGE.sub("", text)
    labels = [name.strip() for group in _GROUPING.findall(text) for name in group.split(",") if name.strip()]
    text = _GROUPING.sub(" ", text)
    for matchers in _MATCHERS.findall(text):
        labels += [m.split("=")[0].rstrip("!~ ").strip() for m in matchers.split(",") if m.strip()]
    text = _MATCHERS.sub(" ", text)
    label_values = re.fullmatch(r"\s*label_values\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*", text)
    if label_values:
        return [label_values[1]], [label_values[2]]
    names = []
    for match in _IDENTIFIER.finditer(text):
        word, rest = match.group(), text[match.end() :].lstrip()
        if word in _KEYWORDS or rest.startswith("(") or word.startswith("$"):
            continue  # a function, an aggregation, or a Grafana variable
        if text[max(0, match.start() - 1)] == "$":
            continue
        names.append(word)
    return names, labels


def test_the_parser_finds_names_and_labels() -> None:
    names, labels = references(
        'histogram_quantile(0.99, sum by (le, controller) (rate(foo_bucket{a="x",b=~"$v"}[5m]))) / bar'
    )
    assert names == ["foo_bucket", "bar"]
    assert labels == ["le", "controller", "a", "b"]
    assert references("label_values(baz, nodepool)") == (["baz"], ["nodepool"])


def test_the_dashboard_is_grafana_json_with_panels() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["title"] == "kapstan"
    titles = {panel["title"] for panel in dashboard["panels"]}
    wanted = {"Cost per hour", "NodeClaims by state", "Scheduling duration", "Pending pods"}
    assert wanted | {"Disruption decisions, by reason"} <= titles


@pytest.mark.parametrize("expr", sorted(set(_expressions(json.loads(DASHBOARD.read_text())))))
def test_every_query_uses_exported_metrics_and_their_labels(expr: str) -> None:
    exported = _exported()
    names, labels = references(expr)
    assert names, f"no metric found in {expr!r}"
    for name in names:
        assert name in exported, f"{name} in {expr!r} is not exported; kapstan exports {sorted(exported)}"
    carried = set.union(*(exported[name][1] for name in names))
    for label in labels:
        assert label in carried, f"label {label} in {expr!r} is on none of {names}"


def test_every_exported_metric_is_on_the_dashboard() -> None:
    exported = _exported()
    used = {name for expr in _expressions(json.loads(DASHBOARD.read_text())) for name in references(expr)[0]}
    shown = {exported[name][0] for name in used if name in exported}
    # The build info is a constant 1 labelled with the version: nothing to chart.
    missing = {metric for metric, _ in exported.values()} - shown - {"kapstan_build"}
    assert not missing, f"metrics with no panel: {sorted(missing)}"
