"""A loopback, read-only Kubernetes API server for tests (kube-apiserver v1.33.5 behaviour).

Quick start::

    from tests.support.apiserver import serve

    with serve([deployment, service]) as server:
        api = kr8s.api(kubeconfig=str(server.kubeconfig_path), context=server.context)
        api.get("deployments", namespace="prod")
        assert not server.write_violations

or, in pytest, ``from tests.support.apiserver import kube_apiserver  # noqa: F401`` in a conftest,
and::

    def test_x(kube_apiserver):
        server = kube_apiserver(objects)        # started; stopped at teardown
        server.inject(path_regex="/deployments$", status=429, retry_after=1)

The fixture fails the test at teardown if a server saw a write, unless it was started with
``expect_writes=True``. See :class:`KubeAPIServer` for faults, the request log and identities.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .auth import AccessRule, Attributes, Decision, Identity
from .discovery import Discovery, ResourceType
from .server import Fault, KubeAPIServer, RequestRecord, default_identities
from .store import encode_continue, load_objects
from .tls import session_tls

Obj = dict[str, Any]
ObjectsArg = Iterable[Obj] | Obj | str | Path
#: Directory of the recordings from the real kube-apiserver (testdata/apiserver/README.md).
REFERENCE_DIR = Path(__file__).resolve().parents[3] / "testdata" / "apiserver"
#: The Argo CD controller's ClusterRole and ClusterRoleBinding as Argo CD's install.yaml has them.
CONTROLLER_RBAC = REFERENCE_DIR.parent / "argocd" / "controller-rbac.yaml"


def controller_rbac() -> list[Obj]:
    """What a real Argo CD installation grants its controller (everything, cluster-wide): served
    beside a cluster's objects, the server's SubjectAccessReviews allow it what Argo CD may do."""
    return load_objects(CONTROLLER_RBAC)


@contextlib.contextmanager
def serve(
    objects: ObjectsArg = (),
    *,
    identities: Sequence[Identity] | None = None,
    workdir: Path | None = None,
    fill_metadata: bool = True,
    keep_alive: bool = False,
) -> Iterator[KubeAPIServer]:
    """Start a :class:`KubeAPIServer` with ``objects``; stop it on exit."""
    server = KubeAPIServer(
        objects,
        identities=identities,
        workdir=workdir,
        fill_metadata=fill_metadata,
        keep_alive=keep_alive,
    )
    with server:
        yield server


ServerFactory = Callable[..., KubeAPIServer]


@contextlib.contextmanager
def server_factory() -> Iterator[ServerFactory]:
    """Context manager behind :func:`kube_apiserver`: yields ``start(objects, **options)``.

    ``start`` takes the :class:`KubeAPIServer` options plus ``expect_writes``. On exit every
    server is stopped, then the test fails if a server without ``expect_writes`` saw a write.
    """
    started: list[tuple[KubeAPIServer, bool]] = []

    def start(
        objects: ObjectsArg = (),
        *,
        identities: Sequence[Identity] | None = None,
        expect_writes: bool = False,
        fill_metadata: bool = True,
        keep_alive: bool = False,
    ) -> KubeAPIServer:
        server = KubeAPIServer(
            objects, identities=identities, fill_metadata=fill_metadata, keep_alive=keep_alive
        )
        started.append((server, expect_writes))
        return server.start()

    try:
        yield start
    finally:
        for server, _ in started:
            server.stop()
    violations = [
        f"{r.method} {r.path}"
        for server, expect_writes in started
        if not expect_writes
        for r in server.write_violations
    ]
    if violations:
        pytest.fail("the code under test tried to write to the cluster: " + ", ".join(violations))


@pytest.fixture
def kube_apiserver() -> Iterator[ServerFactory]:
    """Factory fixture: ``kube_apiserver(objects, *, identities=None, expect_writes=False, ...)``.

    Every server it starts is stopped at teardown; a server that saw write requests fails
    the test unless started with ``expect_writes=True``.
    """
    with server_factory() as start:
        yield start


def live_args(
    app: str, server: KubeAPIServer, repo: Path, *extra: str, context: str | None = None
) -> list[str]:
    """The command line of a live run of ``app`` against ``server`` with ``repo`` as the repo
    root and no entry-point plugins: ``--context`` only when ``context`` is given, ``extra``
    last."""
    args = [app, "--kubeconfig", str(server.kubeconfig_path)]
    if context is not None:
        args += ["--context", context]
    return [*args, "--repo-root", str(repo), "--no-entry-points", *extra]


__all__ = [
    "CONTROLLER_RBAC",
    "REFERENCE_DIR",
    "AccessRule",
    "Attributes",
    "Decision",
    "Discovery",
    "Fault",
    "Identity",
    "KubeAPIServer",
    "RequestRecord",
    "ResourceType",
    "ServerFactory",
    "controller_rbac",
    "default_identities",
    "encode_continue",
    "kube_apiserver",
    "live_args",
    "load_objects",
    "serve",
    "server_factory",
    "session_tls",
]
