"""The local sandbox: a real Kubernetes control plane plus Cluster API, on loopback, without Docker.

``Sandbox(dir).up()`` starts etcd, one or two kube-apiservers (management and workload), their
controller-managers, the scheduler and kwok on the workload side, installs the Cluster API CRDs and our
test provider's, and runs the Cluster API core manager and our provider. ``down()`` stops every process
it recorded and removes what it created. The state lives in ``DIR`` so that ``kapstan local down`` in
another shell can undo ``kapstan local up``.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kr8s
import yaml
from kr8s.objects import CustomResourceDefinition, new_class

from kapstan.kube.client import without_version_warning
from kapstan.local import components, kubeconfig, procs
from kapstan.local.build import Artifacts
from kapstan.local.procs import SandboxError
from kapstan.local.sources import build

STATE_FILE = "sandbox.json"


def default_dir() -> Path:
    """Where ``kapstan local up`` puts its state when no --dir is given."""
    import os

    return Path(tempfile.gettempdir()) / f"kapstan-local-{os.getuid()}"


@dataclass
class Sandbox:
    """One sandbox rooted at ``directory``; see the module docstring."""

    directory: Path
    two_clusters: bool = False
    audit_policy: Path | None = None
    """An audit policy for the API servers (``bench.live`` counts kapstan's requests with one)."""

    @property
    def audit(self) -> components.Audit | None:
        if self.audit_policy is None:
            return None
        return components.Audit(self.audit_policy, self.directory / "logs")

    @property
    def management_kubeconfig(self) -> Path:
        return self.directory / ("management.kubeconfig" if self.two_clusters else "kubeconfig")

    @property
    def workload_kubeconfig(self) -> Path:
        return self.directory / ("workload.kubeconfig" if self.two_clusters else "kubeconfig")

    @property
    def kubeconfig(self) -> Path:
        """``DIR/kubeconfig``: the management cluster's (the only one in single-cluster mode)."""
        return self.directory / "kubeconfig"

    def service_account_kubeconfig(self, namespace: str, name: str, *, workload: bool = True) -> Path:
        """A kubeconfig acting as ServiceAccount ``namespace/name`` (created if missing), to test RBAC.

        Written to ``DIR/sa-<cluster>-<namespace>-<name>.kubeconfig``; removed by ``down``.
        """
        source = self.workload_kubeconfig if workload else self.management_kubeconfig
        server: str = yaml.safe_load(source.read_text())["clusters"][0]["cluster"]["server"]
        pki = self.directory / "pki"
        token = kubeconfig.service_account_token(server, pki, namespace, name)
        side = "workload" if workload else "management"
        path = self.directory / f"sa-{side}-{namespace}-{name}.kubeconfig"
        kubeconfig.write(path, server, pki, f"kapstan-{side}", token=token)
        return path

    # -- up -------------------------------------------------------------------------------------------

    def up(self, art: Artifacts | None = None, timeout: float = 180.0) -> None:
        """Start everything and return once it is all ready; on any failure, undo what was started."""
        art = art or build()
        if (self.directory / STATE_FILE).exists():
            raise SandboxError(
                f"a sandbox is already recorded in {self.directory}; run `kapstan local down` first"
            )
        created = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._save_state({"two_clusters": self.two_clusters, "created_dir": created, "started": []})
        try:
            self._up(art, timeout)
        except BaseException:
            self.down()
            raise

    def _up(self, art: Artifacts, timeout: float) -> None:
        started = time.monotonic()
        pki = self.directory / "pki"
        self._run([str(art.sandbox), "certs", f"--dir={pki}"])

        etcd, etcd_url = components.etcd(art, self.directory / "data" / "etcd")
        self._start_all([etcd], pki, timeout)

        names = ["management", "workload"] if self.two_clusters else ["sandbox"]
        servers = [
            components.apiserver(art, n, etcd_url, pki, self.directory / "data" / n, self.audit)
            for n in names
        ]
        self._start_all([c for c, _ in servers], pki, timeout)
        kubeconfigs = {}
        for name, (_, port) in zip(names, servers, strict=True):
            path = self.directory / f"{name}.kubeconfig"
            kubeconfig.write(path, f"https://127.0.0.1:{port}", pki, f"kapstan-{name}")
            kubeconfigs[name] = path
        if self.two_clusters:
            shutil.copy(kubeconfigs["management"], self.kubeconfig)
        else:
            kubeconfigs["sandbox"].rename(self.kubeconfig)
            kubeconfigs["sandbox"] = self.kubeconfig
        mgmt, workload = self.management_kubeconfig, self.workload_kubeconfig

        # Garbage collection (ownerReferences) and namespaces need a controller-manager on each side;
        # pods are scheduled and "run" on the workload side only.
        workload_name = names[-1]
        kube = [components.controller_manager(art, n, kubeconfigs[n], pki) for n in names]
        kube += [components.scheduler(art, workload_name, workload), components.kwok(art, workload)]
        self._start_all(kube, pki, timeout)

        self._install_crds(mgmt, art)
        manager, webhook_port = components.capi_manager(art, mgmt, pki)
        self._start_all([components.provider(art, mgmt, workload), manager], pki, timeout)
        self._register_webhooks(mgmt, art, pki, webhook_port)
        state = self._load_state()
        state["ready_seconds"] = round(time.monotonic() - started, 1)
        self._save_state(state)

    def _run(self, argv: list[str]) -> None:
        import subprocess

        res = subprocess.run(argv, capture_output=True, text=True)
        if res.returncode != 0:
            raise SandboxError(f"{' '.join(argv)} failed:\n{res.stderr}")

    def _start_all(self, comps: list[components.Component], pki: Path, timeout: float) -> None:
        """Start several components at once (they come up in parallel), then wait for each."""
        pids = []
        for comp in comps:
            pid = procs.start(self.directory, comp.name, comp.argv, comp.env)
            state = self._load_state()
            state["started"].append(comp.name)
            self._save_state(state)
            pids.append(pid)
        for comp, pid in zip(comps, pids, strict=True):
            procs.wait_until(
                self.directory,
                comp.name,
                pid,
                lambda c=comp: components.probe(c.ready_url, pki, c.client_cert),  # type: ignore[misc]
                timeout,
            )

    def _install_crds(self, mgmt: Path, art: Artifacts) -> None:
        api = _api(mgmt)
        docs: list[dict[str, Any]] = []
        for path in [*sorted(art.capi_crds.glob("*.yaml")), art.provider_crds]:
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
        for doc in docs:
            # Cluster API finds which version of a referenced kind implements its contract through this
            # label, which CAPI's release manifests add on top of controller-gen's output.
            versions = "_".join(v["name"] for v in doc["spec"]["versions"])
            doc["metadata"].setdefault("labels", {}).setdefault("cluster.x-k8s.io/v1beta2", versions)
        crds = [CustomResourceDefinition(d, api=api) for d in docs]
        for crd in crds:
            crd.create()
        for crd in crds:
            crd.wait("condition=Established", timeout=60)

    def _register_webhooks(self, mgmt: Path, art: Artifacts, pki: Path, port: int) -> None:
        """Point the core manager's webhook configurations at its loopback port instead of a Service."""
        api = _api(mgmt)
        ca = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
        for doc in yaml.safe_load_all(art.capi_webhooks.read_text()):
            if not doc:
                continue
            doc["metadata"]["name"] = f"capi-{doc['metadata']['name']}"
            for hook in doc.get("webhooks", []):
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            cls = new_class(doc["kind"], "admissionregistration.k8s.io/v1", namespaced=False)
            cls(doc, api=api).create()

    # -- down -----------------------------------------------------------------------------------------

    def down(self) -> None:
        """Stop every recorded process (last started first) and remove what ``up`` created."""
        state = self._load_state()
        for name, pid in sorted(
            procs.recorded(self.directory).items(),
            key=lambda item: -_index(state.get("started", []), item[0]),
        ):
            procs.stop(self.directory, name, pid)
        if state.get("created_dir", False):
            shutil.rmtree(self.directory, ignore_errors=True)
            return
        for name in ("pki", "data", "logs", "pids"):
            shutil.rmtree(self.directory / name, ignore_errors=True)
        for name in (
            "kubeconfig",
            "management.kubeconfig",
            "workload.kubeconfig",
            "sandbox.kubeconfig",
            STATE_FILE,
        ):
            with contextlib.suppress(FileNotFoundError):
                (self.directory / name).unlink()

    # -- chaos ----------------------------------------------------------------------------------------

    def restart_apiserver(self, *, down_for: float = 0.0, timeout: float = 120.0) -> float:
        """Kill the (workload) kube-apiserver, as a crashed control-plane node would, wait ``down_for``
        seconds, start it again with the same command line (same port, certificates and etcd prefix),
        and return once it answers ``/readyz``: the seconds it was away. For ``tests/chaos``."""
        names = ["management", "workload"] if self.two_clusters else ["sandbox"]
        name = f"kube-apiserver-{names[-1]}"
        pid = procs.recorded(self.directory)[name]
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        port = next(a for a in argv if a.startswith(b"--secure-port=")).partition(b"=")[2].decode()
        started = time.monotonic()
        procs.stop(self.directory, name, pid, grace=0.0)
        time.sleep(down_for)
        pki = self.directory / "pki"
        again = procs.start(self.directory, name, [a.decode() for a in argv])
        ready = f"https://127.0.0.1:{port}/readyz"
        procs.wait_until(self.directory, name, again, lambda: components.probe(ready, pki, True), timeout)
        return time.monotonic() - started

    # -- state ----------------------------------------------------------------------------------------

    def _load_state(self) -> dict[str, Any]:
        path = self.directory / STATE_FILE
        if not path.exists():
            return {}
        loaded: dict[str, Any] = json.loads(path.read_text())
        return loaded

    def _save_state(self, state: dict[str, Any]) -> None:
        (self.directory / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> Sandbox:
        """The sandbox recorded in ``directory`` (for ``down`` from another process)."""
        path = directory / STATE_FILE
        two = bool(json.loads(path.read_text()).get("two_clusters")) if path.exists() else False
        return cls(directory, two_clusters=two)


def _api(path: Path) -> kr8s.Api:
    with without_version_warning():
        return kr8s.api(kubeconfig=str(path))


def _index(items: list[str], name: str) -> int:
    return items.index(name) if name in items else len(items)


@contextlib.contextmanager
def running(
    directory: Path | None = None, two_clusters: bool = False, audit_policy: Path | None = None
) -> Iterator[Sandbox]:
    """A sandbox for the duration of a ``with`` block, torn down however the block ends: normally, on an
    exception or Ctrl-C inside it, when start-up fails (``up`` tears itself down), and, as a last resort,
    at interpreter exit (a process that exits without unwinding the block must not leave servers behind).
    """
    tmp = directory is None
    root = Path(tempfile.mkdtemp(prefix="kapstan-local-")) / "sandbox" if tmp else directory
    assert root is not None
    sandbox = Sandbox(root, two_clusters=two_clusters, audit_policy=audit_policy)
    atexit.register(sandbox.down)  # idempotent, so running it again after the block is harmless
    sandbox.up()  # tears itself down if start-up fails
    try:
        yield sandbox
    finally:
        sandbox.down()
        atexit.unregister(sandbox.down)
        if tmp:
            shutil.rmtree(root.parent, ignore_errors=True)
