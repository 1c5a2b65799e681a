"""Bad input through `kapstan simulate`: one clear line naming the object and field, exit 2, no traceback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kapstan.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
CATALOG = (SCENARIOS / "article-catalog-mds.yaml").read_text()
WORKLOAD = (SCENARIOS / "inflate-8x1cpu.yaml").read_text()


def run(tmp_path: Path, text: str) -> tuple[int, str]:
    manifest = tmp_path / "input.yaml"
    manifest.write_text(text)
    result = CliRunner().invoke(main, ["simulate", "-f", str(manifest), "--engine", "python"])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (
            (
                CATALOG.replace(
                    'capacity.cluster-autoscaler.kubernetes.io/cpu: "2"',
                    'capacity.cluster-autoscaler.kubernetes.io/cpu: "2x"',
                    1,
                ),
                "",
            ),
            ["MachineDeployment", "capacity.cluster-autoscaler.kubernetes.io/cpu", "2x"],
        ),
        (
            (CATALOG.replace("operator: In", "operator: Equalz", 1), ""),
            ["NodePool", "operator", "Equalz"],
        ),
        (
            (CATALOG.replace("name: default\nspec: {}", "name: renamed\nspec: {}", 1), ""),
            ["NodePool default", "nodeClassRef", "default"],
        ),
        (
            (
                CATALOG.replace(
                    'capacity.cluster-autoscaler.kubernetes.io/cpu: "2"', "example.com/unrelated: x", 1
                ),
                "",
            ),
            ["MachineDeployment", "capacity.cluster-autoscaler.kubernetes.io/cpu"],
        ),
    ],
    ids=["malformed-quantity", "unknown-operator", "missing-nodeclass", "no-capacity-source"],
)
def test_bad_input_is_one_clear_error(tmp_path: Path, broken: tuple[str, str], expected: list[str]) -> None:
    code, output = run(tmp_path, broken[0] + "\n---\n" + WORKLOAD)
    assert code == 2, output
    assert output.startswith("error: ")
    for fragment in expected:
        assert fragment in output


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    code, output = run(tmp_path, "kind: Pod\nmetadata: [unclosed\n")
    assert code == 2 and "input.yaml" in output


# Issue 12, "Bad input": every class ends as one clean line naming the object and field, on both engines.

POD_CPU = 'cpu: "1"'
NODEPOOL_LIMITS = 'limits:\n    cpu: "20"'
CONSOLIDATE_AFTER = "consolidateAfter: 30s"
TEMPLATE_END = "      configDrive: true\n"


def simulate(tmp_path: Path, catalog: str, workload: str, engine: str) -> tuple[int, str]:
    manifest = tmp_path / "input.yaml"
    manifest.write_text(catalog + "\n---\n" + workload)
    result = CliRunner().invoke(main, ["simulate", "-f", str(manifest), "--engine", engine])
    assert ("Traceback" not in result.output and result.exception is None) or isinstance(
        result.exception, SystemExit
    )
    return result.exit_code, result.output


def expect_rejection(tmp_path: Path, catalog: str, workload: str, engine: str, fragments: list[str]) -> str:
    started = time.monotonic()
    code, output = simulate(tmp_path, catalog, workload, engine)
    assert time.monotonic() - started < 10, "took too long: a hang in the making"
    assert code == 2, output
    assert output.startswith("error: ") and output.count("\n") == 1, output
    assert len(output) < 1000 and not any(ord(c) < 32 for c in output[:-1]), output
    for fragment in fragments:
        assert fragment in output, output
    return output


def preferred_node_term(weight: object) -> str:
    return WORKLOAD.replace(
        "    spec:\n      containers:",
        "    spec:\n      affinity:\n        nodeAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n"
        f"            - weight: {weight}\n              preference:\n                matchExpressions:\n"
        "                  - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n      containers:",
    )


def required_gt(value: str) -> str:
    return WORKLOAD.replace(
        "    spec:\n      containers:",
        "    spec:\n      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            nodeSelectorTerms:\n              - matchExpressions:\n"
        f"                  - {{key: example.com/gen, operator: Gt, values: ['{value}']}}\n      containers:",
    )


def with_host_port(port: object) -> str:
    return WORKLOAD.replace(
        "          image: registry.k8s.io/pause:3.10\n",
        f"          image: registry.k8s.io/pause:3.10\n          ports: [{{containerPort: 80, hostPort: {port}}}]\n",
    )


def with_spread(max_skew: object) -> str:
    return WORKLOAD.replace(
        "    spec:\n      containers:",
        f"    spec:\n      topologySpreadConstraints:\n        - {{maxSkew: {max_skew}, topologyKey: kubernetes.io/hostname, "
        "whenUnsatisfiable: DoNotSchedule}\n      containers:",
    )


def with_eviction(threshold: str) -> str:
    return CATALOG.replace(
        "name: default\nspec: {}",
        f"name: default\nspec:\n  kubelet:\n    evictionHard: {{nodefs.available: '{threshold}'}}",
        1,
    )


def with_template_capacity(cpu: str) -> str:
    """The c3-4 flavor sized by its OpenStackMachineTemplate's status.capacity, not by annotations."""
    at = CATALOG.index(TEMPLATE_END, CATALOG.index("name: capi-ovh-karpenter-c3-4")) + len(TEMPLATE_END)
    catalog = CATALOG[:at] + f'status:\n  capacity: {{cpu: "{cpu}", memory: 4G}}\n' + CATALOG[at:]
    return catalog.replace(
        'capacity.cluster-autoscaler.kubernetes.io/cpu: "2"', "example.com/unrelated: x", 1
    )


BOMB = (
    "[&b0 [l, l, l, l, l, l, l, l, l], "
    + ", ".join(f"&b{i} [{', '.join([f'*b{i - 1}'] * 9)}]" for i in range(1, 9))
    + "]"
)

REJECTED: list[tuple[str, str, str, list[str]]] = [
    # Crashes
    (
        "quantity-above-2^64",
        CATALOG,
        WORKLOAD.replace(POD_CPU, "cpu: 18446744073709551617", 1),
        ["Deployment default/inflate", "requests.cpu", "too large"],
    ),
    ("weight-above-2^64", CATALOG, preferred_node_term(2**65), ["Deployment default/inflate", "weight"]),
    ("port-above-2^64", CATALOG, with_host_port(2**65), ["Deployment default/inflate", "hostPort"]),
    ("max-skew-above-2^64", CATALOG, with_spread(2**65), ["Deployment default/inflate", "maxSkew"]),
    (
        "duration-overflow",
        CATALOG.replace(CONSOLIDATE_AFTER, "consolidateAfter: 99999999999999h"),
        WORKLOAD,
        ["NodePool default", "consolidateAfter", "longer than"],
    ),
    (
        "list-items-not-a-list",
        CATALOG,
        WORKLOAD + "\n---\napiVersion: v1\nkind: List\nitems: {a: 1}\n",
        ["List", "items"],
    ),
    (
        "nesting-1100-deep",
        CATALOG,
        WORKLOAD + "\n---\napiVersion: v1\nkind: Pod\nmetadata: " + "[" * 1100 + "]" * 1100 + "\n",
        ["input.yaml", "nesting"],
    ),
    (
        "price-table-float-overflow",
        CATALOG.replace(
            "name: default\nspec: {}", f"name: default\nspec:\n  priceTable: {{c3-4: {10**400}}}", 1
        ),
        WORKLOAD,
        ["ClusterAPINodeClass default", "priceTable"],
    ),
    (
        "relative-price-from-huge-capacity",
        CATALOG.replace(
            'capacity.cluster-autoscaler.kubernetes.io/cpu: "2"',
            'capacity.cluster-autoscaler.kubernetes.io/cpu: "1e300"',
            1,
        ),
        WORKLOAD,
        ["MachineDeployment", "capacity.cluster-autoscaler.kubernetes.io/cpu", "too large"],
    ),
    (
        "eviction-1/0%",
        with_eviction("1/0%"),
        WORKLOAD,
        ["ClusterAPINodeClass default", "evictionHard", "percentage"],
    ),
    # Hangs
    (
        "alias-bomb-in-an-error",
        CATALOG,
        WORKLOAD + f"\n---\nbomb: {BOMB}\napiVersion: v1\nkind: Pod\nmetadata: {{name: *b8}}\n",
        ["input.yaml", "aliases"],
    ),
    (
        "exponent-1e99999999",
        CATALOG,
        WORKLOAD.replace(POD_CPU, "cpu: 1e99999999", 1),
        ["Deployment default/inflate", "requests.cpu", "too large"],
    ),
    (
        "replicas-2^31-1",
        CATALOG,
        WORKLOAD.replace("replicas: 8", f"replicas: {2**31 - 1}"),
        ["Deployment default/inflate", "spec.replicas", "limit of 100000 pods"],
    ),
    (
        "replicas-10^30",
        CATALOG,
        WORKLOAD.replace("replicas: 8", f"replicas: {10**30}"),
        ["Deployment default/inflate", "spec.replicas"],
    ),
    # Engine disagreements
    (
        "quantity-between-2^63-and-2^64",
        CATALOG,
        WORKLOAD.replace(POD_CPU, f'cpu: "{2**63 + 5}m"', 1),
        ["Deployment default/inflate", "requests.cpu", "too large"],
    ),
    (
        "pods-totals-beyond-int64",
        CATALOG,
        WORKLOAD.replace('memory: "256Mi"', f'memory: "{2**63 - 1}m"', 1),
        ["Pod default/inflate-", "requests.memory", "add up"],
    ),
    (
        "gt-plus-minus",
        CATALOG,
        required_gt("+-5"),
        ["Deployment default/inflate", "operator Gt needs exactly one integer"],
    ),
    ("gt-45-digits", CATALOG, required_gt("9" * 45), ["Deployment default/inflate", "operator Gt"]),
    # Accepted although invalid
    (
        "negative-template-capacity",
        with_template_capacity("-4"),
        WORKLOAD,
        ["OpenStackMachineTemplate", "status.capacity[cpu]", "negative"],
    ),
    ("weight-0", CATALOG, preferred_node_term(0), ["Deployment default/inflate", "weight"]),
    ("weight-101", CATALOG, preferred_node_term(101), ["Deployment default/inflate", "weight"]),
    ("host-port-70000", CATALOG, with_host_port(70000), ["Deployment default/inflate", "hostPort"]),
    (
        "duration-fraction",
        CATALOG.replace(CONSOLIDATE_AFTER, "consolidateAfter: 1.5h"),
        WORKLOAD,
        ["NodePool default", "consolidateAfter"],
    ),
    (
        "duration-milliseconds",
        CATALOG.replace("expireAfter: Never", "expireAfter: 300ms"),
        WORKLOAD,
        ["NodePool default", "expireAfter"],
    ),
    (
        "cron-six-fields",
        CATALOG.replace(
            CONSOLIDATE_AFTER,
            CONSOLIDATE_AFTER + '\n    budgets: [{nodes: "1", schedule: "* * * * * *", duration: 1h}]',
        ),
        WORKLOAD,
        ["NodePool default", "schedule"],
    ),
    (
        "budget-window-seconds",
        CATALOG.replace(
            CONSOLIDATE_AFTER,
            CONSOLIDATE_AFTER + '\n    budgets: [{nodes: "1", schedule: "@daily", duration: 90s}]',
        ),
        WORKLOAD,
        ["NodePool default", "duration"],
    ),
    # Errors that broke the one-line rule
    (
        "yaml-caret-error",
        CATALOG,
        WORKLOAD + "\n---\nkind: Pod\nmetadata: [unclosed\n",
        ["input.yaml", "invalid YAML", "line "],
    ),
    (
        "control-characters",
        CATALOG,
        WORKLOAD.replace("name: inflate", 'name: "in\\e[31mfl\\nate"', 1).replace(POD_CPU, "cpu: 2x", 1),
        ["Deployment default/in\\x1b[31mfl\\nate", "requests.cpu"],
    ),
    (
        "4300-digit-integer",
        CATALOG,
        WORKLOAD.replace(POD_CPU, "cpu: " + "9" * 5000, 1),
        ["input.yaml", "integer of 5000 characters"],
    ),
]


@pytest.mark.parametrize(
    ("catalog", "workload", "fragments"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED]
)
def test_bad_input_class_is_one_clean_line(
    tmp_path: Path, engine: str, catalog: str, workload: str, fragments: list[str]
) -> None:
    expect_rejection(tmp_path, catalog, workload, engine, fragments)


def test_undecodable_bytes_name_the_file(tmp_path: Path) -> None:
    manifest = tmp_path / "latin1.yaml"
    manifest.write_bytes(WORKLOAD.encode().replace(b"pause", b"pa\xffuse", 1))
    result = CliRunner().invoke(main, ["simulate", "-f", str(manifest)])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "latin1.yaml" in result.output and "0xff" in result.output


def test_nodepool_limit_beyond_int64_means_unlimited(tmp_path: Path, engine: str) -> None:
    catalog = CATALOG.replace(NODEPOOL_LIMITS, "limits:\n    cpu: 10000000\n    memory: 10000000Gi", 1)
    code, output = simulate(tmp_path, catalog, WORKLOAD, engine)
    assert code == 0, output
    assert "2 new nodes" in output
