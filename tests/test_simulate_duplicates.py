"""The same pod twice in `kapstan simulate`'s input (issue 12, item 10): an exact copy of a document is
merged, a different object under the same name is refused in one line, and a pod that a workload of the
same input also makes is one pod."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kapstan.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
CATALOG = (SCENARIOS / "article-catalog-mds.yaml").read_text()
WORKLOAD = (SCENARIOS / "inflate-8x1cpu.yaml").read_text()
CONTAINER = "containers: [{name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}]"


def workload(kind: str, name: str, replicas: int, owner: str = "") -> str:
    owned = (
        f", ownerReferences: [{{kind: {owner.split('/')[0]}, name: {owner.split('/')[1]}}}]" if owner else ""
    )
    return f"""
apiVersion: apps/v1
kind: {kind}
metadata: {{name: {name}, namespace: default{owned}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      {CONTAINER}
"""


def pod(name: str, owner: str = "", node: str = "") -> str:
    owned = (
        f", ownerReferences: [{{kind: {owner.split('/')[0]}, name: {owner.split('/')[1]}}}]" if owner else ""
    )
    bound = f"nodeName: {node}\n  " if node else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {{app: web}}{owned}}}
spec:
  {bound}{CONTAINER}
"""


def simulate(tmp_path: Path, engine: str, *documents: str) -> tuple[int, str]:
    manifest = tmp_path / "input.yaml"
    manifest.write_text("\n---\n".join([CATALOG, *documents]))
    result = CliRunner().invoke(main, ["simulate", "-f", str(manifest), "--engine", engine, "-o", "json"])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def planned_pods(output: str) -> list[str]:
    plan = json.loads(output)
    assert plan["unschedulable"] == []
    return sorted(pod for claim in plan["nodeClaims"] for pod in claim["pods"])


def test_a_document_listed_twice_is_one_object(tmp_path: Path, engine: str) -> None:
    code, output = simulate(tmp_path, engine, WORKLOAD, WORKLOAD)
    assert code == 0, output
    assert planned_pods(output) == [f"default/inflate-{i}" for i in range(8)]
    assert sorted(claim["instanceType"] for claim in json.loads(output)["nodeClaims"]) == ["c3-16", "c3-4"]


def test_two_different_objects_under_one_name_are_refused_naming_it(tmp_path: Path, engine: str) -> None:
    code, output = simulate(tmp_path, engine, WORKLOAD, WORKLOAD.replace("replicas: 8", "replicas: 9"))
    assert code == 2
    assert output.startswith("error: Deployment default/inflate: listed twice with different contents")
    assert output.count("\n") == 1 and "(first in " in output and output.count("document") == 2


def test_an_exported_pod_of_a_statefulset_is_one_of_its_replicas(tmp_path: Path, engine: str) -> None:
    code, output = simulate(tmp_path, engine, workload("StatefulSet", "web", 2), pod("web-0"))
    assert code == 0, output
    assert planned_pods(output) == ["default/web-0", "default/web-1"]


def test_pods_owned_through_a_replicaset_count_for_their_deployment(tmp_path: Path, engine: str) -> None:
    """A Deployment, its ReplicaSet and two of its three pods, as `kubectl get -o yaml` exports them: the
    Deployment makes the third pod only."""
    documents = (
        workload("Deployment", "web", 3),
        workload("ReplicaSet", "web-5d8f", 3, owner="Deployment/web"),
        pod("web-5d8f-abcde", owner="ReplicaSet/web-5d8f"),
        pod("web-5d8f-fghij", owner="ReplicaSet/web-5d8f"),
    )
    code, output = simulate(tmp_path, engine, *documents)
    assert code == 0, output
    assert planned_pods(output) == ["default/web-0", "default/web-5d8f-abcde", "default/web-5d8f-fghij"]


def test_two_workloads_that_make_the_same_pod_are_refused(tmp_path: Path, engine: str) -> None:
    code, output = simulate(
        tmp_path, engine, workload("Deployment", "web", 1), workload("StatefulSet", "web", 1)
    )
    assert code == 2
    assert output.startswith(
        "error: StatefulSet default/web: makes pod default/web-0, as Deployment default/web"
    )
