"""The OCI image `make image` builds, run by podman (runc) against the sandbox: the containerised
``kapstan run`` provisions a node for a pending pod, as its non-root user on a read-only root filesystem.

``make image-test`` builds the image and runs this file; without an archive in dist/ (or the tools) the
tests skip and say so, because the image build is too slow for every ``make test``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import E2E

import kapstan
from kapstan.install.deployment import DEFAULT_IMAGE, NONROOT
from kapstan.local import article
from kapstan.local.operator import OperatorProcess

pytestmark = [pytest.mark.sandbox, pytest.mark.image]

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = Path(
    os.environ.get("KAPSTAN_IMAGE_ARCHIVE", REPO / "dist" / f"kapstan-{kapstan.__version__}.oci.tar")
)
# crun cannot start containers on the project's machines (hybrid cgroup v1/v2); runc can. The limits are
# lowered because a container may not raise them above the host's.
PODMAN = ("podman", "--runtime", "runc")
LIMITS = ("--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096")


def _podman(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    """The archive loaded into podman's store; yields the image's id."""
    if not ARCHIVE.exists():
        pytest.skip(f"no image archive at {ARCHIVE}: `make image-test` builds it and runs this test")
    if shutil.which("podman") is None or shutil.which("runc") is None:
        pytest.skip("podman and runc are needed to run the image (image/install-tools.sh installs them)")
    loaded = _podman("load", "--quiet", "--input", str(ARCHIVE))
    assert loaded.returncode == 0, loaded.stderr
    inspected = _podman("image", "inspect", DEFAULT_IMAGE)
    assert inspected.returncode == 0, f"the archive does not carry {DEFAULT_IMAGE}: {loaded.stdout}"
    (info,) = json.loads(inspected.stdout)
    yield str(info["Id"])
    _podman("rmi", "--force", str(info["Id"]))


def test_image_is_labelled_non_root_and_runs_kapstan_without_a_shell(image: str) -> None:
    (info,) = json.loads(_podman("image", "inspect", image).stdout)
    config = info["Config"]
    assert config["User"] == f"{NONROOT}:{NONROOT}"
    assert config["Entrypoint"] == ["/usr/local/bin/kapstan"]  # the console script the Deployments run
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == kapstan.__version__
    revision = labels["org.opencontainers.image.revision"]
    known = subprocess.run(["git", "cat-file", "-e", f"{revision}^{{commit}}"], cwd=REPO, check=False)
    assert len(revision) == 40 and known.returncode == 0, f"{revision} is no commit of this repository"
    version = _podman("run", "--rm", "--read-only", *LIMITS, image, "--version")
    assert version.returncode == 0, version.stderr
    assert kapstan.__version__ in version.stdout
    probe = "import os, shutil; print(os.getuid(), os.path.exists('/bin/sh'), [shutil.which(s) for s in ('sh', 'bash')])"
    checked = _podman(
        "run", "--rm", "--read-only", *LIMITS, "--entrypoint", "/usr/bin/python3.11", image, "-c", probe
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip().split(maxsplit=2) == [str(NONROOT), "False", "[None, None]"]


@pytest.fixture
def container_name() -> Iterator[str]:
    """The container's name; removed after the run's own cleanup has stopped it (the tests request this
    fixture before ``e2e``, so it is torn down after it)."""
    name = f"kapstan-image-{uuid.uuid4().hex[:8]}"
    yield name
    _podman("rm", "--force", "--time", "5", name)


def test_containerised_kapstan_run_provisions_a_node_for_a_pending_pod(
    image: str, container_name: str, e2e: E2E, tmp_path: Path
) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"capi-ovh-karpenter": "c3-4"}),
            [article.deployment("inflate", ns, run.id, 1, "500m")],
        )
    )
    # The sandbox's kubeconfig is root's (0600): the container's user reads a copy, mounted read-only at
    # the same path. Host networking reaches the sandbox's API server on loopback.
    mounted = tmp_path / "kubeconfig"
    mounted.mkdir()
    kubeconfig = mounted / "kubeconfig"
    shutil.copy(run.sandbox.workload_kubeconfig, kubeconfig)
    os.chown(kubeconfig, NONROOT, NONROOT)
    container = (
        *PODMAN, "run", "--rm", "--name", container_name, "--read-only", "--network", "host", *LIMITS,
        "--volume", f"{mounted}:{mounted}:ro", image,
    )  # fmt: skip
    operator = OperatorProcess(
        directory=Path(run.sandbox.directory),
        name=container_name,
        cluster=f"{ns}/{run.cluster}",
        workload_kubeconfig=kubeconfig,
        management_kubeconfig=kubeconfig,
        lease=f"kapstan-{run.id}",
        command=container,
    ).start()
    run.operators.append(operator)

    async def pod_running() -> bool:
        return await run.running_pods("inflate") == 1

    e2e(run.wait_for("the inflate pod Running on a node the container provisioned", pod_running, 240))

    async def initialized() -> bool:
        return await run.initialized_claims() == 1

    e2e(run.wait_for("the claim Launched, Registered and Initialized", initialized, 60))
    (claim,) = e2e(run.claims())
    (machine,) = e2e(run.machines())
    assert machine["metadata"]["annotations"].get("kapstan.io/nodeclaim") == claim["metadata"]["name"]
    url = f"http://127.0.0.1:{operator.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as scraped:
        exposition = scraped.read().decode()
    assert (
        f'karpenter_nodeclaims_created_total{{nodepool="{run.pool}",reason="provisioned"}} 1.0' in exposition
    )
    running = _podman(
        "inspect", "--format", "{{.HostConfig.ReadonlyRootfs}} {{.Config.User}}", container_name
    )
    assert running.stdout.split() == ["true", f"{NONROOT}:{NONROOT}"]
