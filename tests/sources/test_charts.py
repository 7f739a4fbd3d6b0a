"""Charts from Helm repositories and OCI registries, and chart dependencies, against real
servers on loopback (tests/support/registry.py): python's http.server serving `helm repo index`
output, and Debian's docker-registry over plain HTTP, over HTTPS with a throwaway CA, and behind
htpasswd. The real helm pulls, resolves and builds; nothing is mocked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import charts, helm
from tests.conftest import TESTDATA
from tests.support import registry

CHARTS = TESTDATA / "scenario-charts"
USERS = {"alice": "wonderland"}


# ----------------------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def helm_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry.HelmRepo]:
    repo = registry.serve_helm_repo(CHARTS, tmp_path_factory.mktemp("helm-repo"))
    yield repo
    repo.stop()


@pytest.fixture(scope="module")
def private_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry.HelmRepo]:
    repo = registry.serve_helm_repo(
        CHARTS, tmp_path_factory.mktemp("private-repo"), auth="alice:wonderland"
    )
    yield repo
    repo.stop()


@pytest.fixture(scope="module")
def oci_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry.Registry]:
    reg = registry.serve_oci(CHARTS, tmp_path_factory.mktemp("oci-http"))
    yield reg
    reg.stop()


@pytest.fixture(scope="module")
def oci_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry.Registry]:
    reg = registry.serve_oci(CHARTS, tmp_path_factory.mktemp("oci-tls"), tls=True)
    yield reg
    reg.stop()


@pytest.fixture(scope="module")
def oci_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry.Registry]:
    reg = registry.serve_oci(CHARTS, tmp_path_factory.mktemp("oci-auth"), tls=True, users=USERS)
    yield reg
    reg.stop()


@pytest.fixture(autouse=True)
def helm_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's helm config (credentials) is a test's own, empty unless it writes one."""
    home = tmp_path / "helm-config"
    monkeypatch.setenv("HELM_CONFIG_HOME", str(home))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))  # helm's fallback
    for name in ("HELM_REGISTRY_CONFIG", "HELM_REPOSITORY_CONFIG", charts.INSECURE_ENV):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(autouse=True)
def _registry_logs_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that fails while registries run shows their logs' ends (what the registry saw
    and answered), so a failure that does not repeat is still explained."""
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed > failed and registry.RUNNING:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"\n--- registries while {request.node.nodeid} failed ---")
            for reg in registry.RUNNING:
                reporter.write_line(reg.log_tail())


def _charts(tmp_path: Path) -> charts.Charts:
    """Charts as a run makes them: the helm and the insecure registries its Settings name."""
    settings = Settings.from_environ()
    binary = helm.helm_binary(settings)
    assert binary is not None
    insecure = settings.insecure_registries()
    return charts.Charts(tmp_path / "cache", tmp_path / "work", binary, insecure=insecure)


def _trust(reg: registry.Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    assert reg.ca is not None
    monkeypatch.setenv("SSL_CERT_FILE", str(reg.ca.ca_file))


def _login(reg: registry.Registry, home: Path, password: str) -> None:
    """`helm registry login` into the test's own helm config, as a user would."""
    env = registry.helm_env(home.parent / "login-home")
    env["HELM_REGISTRY_CONFIG"] = str(home / "registry" / "config.json")
    if reg.ca is not None:
        env["SSL_CERT_FILE"] = str(reg.ca.ca_file)
    if password == USERS["alice"]:
        reg.login(env, "alice", password)
    else:  # a wrong password cannot log in: write what a stale login leaves behind
        path = home / "registry" / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        token = __import__("base64").b64encode(f"alice:{password}".encode()).decode()
        path.write_text(json.dumps({"auths": {reg.host: {"auth": token}}}))


def _no_half_written(cache: Path) -> None:
    """Every cache entry is complete: no temporary directory, each chart with its metadata."""
    root = cache / "charts"
    if not root.is_dir():
        return
    entries = sorted(root.iterdir())
    assert not [e.name for e in entries if e.name.startswith(".tmp-")]
    for entry in entries:
        assert (entry / "meta.json").is_file() or (entry / "charts").is_dir(), entry


# ----------------------------------------------------------------------------- classify


@pytest.mark.parametrize(
    ("repo_url", "chart", "kind", "ref"),
    [
        ("https://charts.example.com/stable", "web", "repo", "https://charts.example.com/stable"),
        ("http://127.0.0.1:8080/", "web", "repo", "http://127.0.0.1:8080"),
        ("ghcr.io/org/charts", "web", "oci", "oci://ghcr.io/org/charts/web"),
        (
            "registry-1.docker.io/bitnamicharts",
            "nginx",
            "oci",
            "oci://registry-1.docker.io/bitnamicharts/nginx",
        ),
        ("oci://ghcr.io/org/charts", "web", "oci", "oci://ghcr.io/org/charts"),  # chart ignored
        ("oci://ghcr.io/org/charts/web", "", "oci", "oci://ghcr.io/org/charts/web"),
    ],
)
def test_chart_sources_are_classified_as_argo_cd_does(
    repo_url: str, chart: str, kind: str, ref: str
) -> None:
    found = charts.classify(repo_url, chart)
    assert found is not None
    assert (found.kind, found.ref) == (kind, ref)


def test_credentials_in_a_url_are_never_shown() -> None:
    source = charts.classify("https://bob:s3cret@charts.example.com/x", "web")
    assert source is not None
    assert source.describe("1.0.0") == "helm chart web 1.0.0 from https://***@charts.example.com/x"
    assert "s3cret" not in charts.redact('Get "https://bob:s3cret@h/index.yaml": refused')


def test_git_sources_are_not_charts() -> None:
    assert charts.classify("https://github.com/org/repo.git", "") is None
    assert charts.classify("git@github.com:org/repo.git", "") is None
    with pytest.raises(SourceError, match="is a git URL"):
        charts.classify("git@github.com:org/repo.git", "web")


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("1.2.3", True),
        ("v1.2.3", True),
        ("1.2", True),
        ("1.2.3-rc.1+build.5", True),
        ("1.2.*", False),
        (">=1.0 <2", False),
        ("^1.2", False),
        ("~1.2.0", False),
        ("", False),
        ("latest", False),
    ],
)
def test_versions_and_constraints_as_masterminds_semver(text: str, exact: bool) -> None:
    assert charts.is_version(text) is exact


@pytest.mark.parametrize(
    ("repos", "url", "permitted"),
    [
        (["*"], "https://charts.example.com", True),
        (["https://charts.example.com"], "https://charts.example.com", True),
        (["https://charts.example.com/*"], "https://charts.example.com/a/b", False),
        (["https://charts.example.com/**"], "https://charts.example.com/a/b", True),
        (["https://github.com/org/*"], "https://charts.example.com", False),
        (["*", "!https://charts.example.com"], "https://charts.example.com", False),
        (["*", "!https://charts.example.com"], "https://other.example.com", True),
        (["HTTPS://Charts.Example.com"], "https://charts.example.com", True),
        (["localhost:5000/*"], "localhost:5000/myrepo", True),
        ([], "https://charts.example.com", False),
    ],
)
def test_source_repos_match_as_app_project_is_source_permitted(
    repos: list[str], url: str, permitted: bool
) -> None:
    assert charts.RepoPolicy("team", tuple(repos)).permits(url) is permitted


# ----------------------------------------------------------------------------- Helm repository


@pytest.mark.parametrize(
    ("asked", "pulled"),
    [
        ("1.2.*", "1.2.3"),
        (">=1.0 <2", "1.2.3"),
        ("^2", "2.0.0"),
        ("~1.2.0", "1.2.3"),
        ("1.2.0", "1.2.0"),
    ],
)
def test_helm_repository_versions_and_ranges(
    helm_repo: registry.HelmRepo, tmp_path: Path, asked: str, pulled: str
) -> None:
    source = charts.classify(helm_repo.url, "web")
    assert source is not None
    got = _charts(tmp_path).pull(source, asked)
    assert got.version == pulled
    meta = yaml.safe_load((got.directory / "Chart.yaml").read_text())
    assert (meta["name"], meta["version"]) == ("web", pulled)
    assert got.digest.startswith("sha256:")


def test_pulled_versions_are_reused_without_the_network(tmp_path: Path) -> None:
    repo = registry.serve_helm_repo(CHARTS, tmp_path / "repo")
    source = charts.classify(repo.url, "web")
    assert source is not None
    first = _charts(tmp_path).pull(source, "1.2.*")
    repo.stop()  # nothing answers any more
    again = _charts(tmp_path).pull(source, "1.2.3")
    assert again == first
    with pytest.raises(SourceError, match="connection refused"):
        _charts(tmp_path).pull(source, "1.2.*")  # a range asks the repository every time
    _no_half_written(tmp_path / "cache")


def test_without_a_cache_the_chart_lives_in_the_work_directory(
    helm_repo: registry.HelmRepo, tmp_path: Path
) -> None:
    """--no-cache: pulled into the run's work directory, kept there for the render."""
    binary = helm.helm_binary()
    assert binary is not None
    source = charts.classify(helm_repo.url, "web")
    assert source is not None
    pulled = charts.Charts(None, tmp_path / "work", binary).pull(source, "1.2.0")
    assert (pulled.directory / "Chart.yaml").is_file()
    assert pulled.directory.is_relative_to(tmp_path / "work")
    # the helm configuration it ran with (credentials) is gone; only the chart stays
    assert not list((tmp_path / "work").rglob("repositories.yaml"))


def test_helm_repository_credentials_come_from_the_users_repositories_yaml(
    private_repo: registry.HelmRepo, tmp_path: Path, helm_config: Path
) -> None:
    source = charts.classify(private_repo.url, "cache")
    assert source is not None
    with pytest.raises(SourceError, match=r"helm chart cache 0\.3\.1 from http.*: 401"):
        _charts(tmp_path).pull(source, "0.3.1")
    helm_config.mkdir(parents=True)
    (helm_config / "repositories.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "",
                "repositories": [
                    {
                        "name": "private",
                        "url": private_repo.url + "/",
                        "username": "alice",
                        "password": "wonderland",
                    }
                ],
            }
        )
    )
    assert _charts(tmp_path).pull(source, "0.3.1").version == "0.3.1"
    _no_half_written(tmp_path / "cache")


@pytest.mark.parametrize(
    ("chart", "version", "cause"),
    [
        ("web", "9.9.9", "version not found: the repository index has no web-9.9.9"),
        ("nope", "1.0.0", "chart not found: the repository index has no chart nope"),
    ],
)
def test_missing_chart_or_version_is_one_line(
    helm_repo: registry.HelmRepo, tmp_path: Path, chart: str, version: str, cause: str
) -> None:
    source = charts.classify(helm_repo.url, chart)
    assert source is not None
    with pytest.raises(SourceError) as info:
        _charts(tmp_path).pull(source, version)
    message = info.value.message
    assert message == f"helm chart {chart} {version} from {helm_repo.url}: {cause}"
    _no_half_written(tmp_path / "cache")


def test_unreachable_repository_is_one_line(tmp_path: Path) -> None:
    source = charts.classify("http://127.0.0.1:9/charts", "web")
    assert source is not None
    with pytest.raises(SourceError) as info:
        _charts(tmp_path).pull(source, "1.2.3")
    assert info.value.message.startswith("helm chart web 1.2.3 from http://127.0.0.1:9/charts: ")
    assert "connection refused" in info.value.message
    assert "\n" not in info.value.message
    _no_half_written(tmp_path / "cache")


def test_empty_target_revision_is_an_error(helm_repo: registry.HelmRepo, tmp_path: Path) -> None:
    source = charts.classify(helm_repo.url, "web")
    assert source is not None
    with pytest.raises(SourceError, match="targetRevision is empty"):
        _charts(tmp_path).pull(source, "")


# ----------------------------------------------------------------------------- OCI


def test_oci_over_https_trusts_ssl_cert_file(
    oci_tls: registry.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = charts.classify(f"{oci_tls.host}/charts", "web")  # no scheme: OCI
    assert source is not None
    with pytest.raises(SourceError, match="x509") as info:
        _charts(tmp_path).pull(source, "1.2.3")
    assert "SSL_CERT_FILE" in (info.value.hint or "")
    _trust(oci_tls, monkeypatch)
    assert _charts(tmp_path).pull(source, ">=1.0 <2").version == "1.2.3"
    assert _charts(tmp_path).pull(source, "2.0.0").version == "2.0.0"
    artifact = charts.classify(f"oci://{oci_tls.host}/charts/cache", "")
    assert artifact is not None
    assert _charts(tmp_path).pull(artifact, "0.3.1").version == "0.3.1"
    _no_half_written(tmp_path / "cache")


def test_plain_http_only_for_registries_marked_insecure(
    oci_http: registry.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = charts.classify(f"{oci_http.host}/charts", "cache")
    assert source is not None
    with pytest.raises(SourceError, match="HTTP response to HTTPS client") as info:
        _charts(tmp_path).pull(source, "0.3.1")
    assert charts.INSECURE_ENV in (info.value.hint or "")
    monkeypatch.setenv(charts.INSECURE_ENV, f"other.example:5000, {oci_http.host}")
    assert _charts(tmp_path).pull(source, "0.3.1").version == "0.3.1"


@pytest.mark.parametrize("password", [None, "not-the-password"])
def test_registry_401_is_one_line_naming_the_source(
    oci_auth: registry.Registry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    helm_config: Path,
    password: str | None,
) -> None:
    _trust(oci_auth, monkeypatch)
    if password is not None:
        _login(oci_auth, helm_config, password)
    source = charts.classify(f"{oci_auth.host}/charts", "web")
    assert source is not None
    with pytest.raises(SourceError) as info:
        _charts(tmp_path).pull(source, "1.2.3")
    message = info.value.message
    assert message.startswith(f"helm chart web 1.2.3 from {oci_auth.host}/charts: 401 Unauthorized")
    assert "\n" not in message
    assert "helm registry login" in (info.value.hint or "")
    _no_half_written(tmp_path / "cache")


@pytest.mark.parametrize(
    ("stderr", "starts"),
    [
        # helm 4's own lines, from registries whose random port holds 401 or 403
        (
            (
                'Error: Get "https://127.0.0.1:40121/v2/charts/web/manifests/1.2.3": tls: failed '
                "to verify certificate: x509: certificate signed by unknown authority"
            ),
            'Get "https://127.0.0.1:40121/',
        ),
        ("Error: 127.0.0.1:40121/charts/web:9.9.9: not found", "version not found"),
        ("Error: 127.0.0.1:34031/charts/web:1.0.0: not found", "version not found"),
        ("Error: 10.0.0.1:403/charts/web:1.0.0: forbidden path", "10.0.0.1:403"),
        ("Error: pull from registry.example:4010/web: 401 Unauthorized", "401 Unauthorized"),
        ("Error: unexpected status code 401: unauthorized", "401 Unauthorized"),
        ("Error: GET https://r.example/v2/web: 403 Forbidden", "403 Forbidden"),
    ],
)
def test_status_codes_are_read_as_numbers_not_as_parts_of_a_port(
    stderr: str, starts: str, tmp_path: Path
) -> None:
    assert charts._cause(b"", stderr.encode(), tmp_path).startswith(starts)


def test_registry_credentials_come_from_the_users_registry_config(
    oci_auth: registry.Registry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    helm_config: Path,
) -> None:
    _trust(oci_auth, monkeypatch)
    _login(oci_auth, helm_config, USERS["alice"])
    source = charts.classify(f"{oci_auth.host}/charts", "web")
    assert source is not None
    assert _charts(tmp_path).pull(source, "1.2.*").version == "1.2.3"


def test_oci_version_not_found(
    oci_tls: registry.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _trust(oci_tls, monkeypatch)
    source = charts.classify(f"{oci_tls.host}/charts", "web")
    assert source is not None
    with pytest.raises(SourceError) as info:
        _charts(tmp_path).pull(source, "9.9.9")
    assert info.value.message == (
        f"helm chart web 9.9.9 from {oci_tls.host}/charts: version not found: the registry has "
        f"no {oci_tls.host}/charts/web:9.9.9"
    )


# ----------------------------------------------------------------------------- dependencies


def _wrapper_chart(tree: Path, deps: list[dict[str, str]]) -> Path:
    chart = tree / "charts" / "shop"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        yaml.safe_dump(
            {"apiVersion": "v2", "name": "shop", "version": "0.1.0", "dependencies": deps}
        )
    )
    (chart / "values.yaml").write_text("web:\n  replicaCount: 4\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\ndata: {}\n"
    )
    return chart


def _build(tmp_path: Path, chart: Path, policy: charts.RepoPolicy | None = None) -> list[str]:
    built = _charts(tmp_path).build_dependencies(
        chart,
        chart.parents[1],
        "charts/shop",
        policy=policy,
        pass_credentials=False,
        revision="0" * 40,
    )
    return sorted(p.name for p in (built / "charts").iterdir())


def test_dependencies_from_a_helm_repository_and_an_oci_registry(
    helm_repo: registry.HelmRepo,
    oci_tls: registry.Registry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _trust(oci_tls, monkeypatch)
    chart = _wrapper_chart(
        tmp_path / "tree",
        [
            {"name": "web", "version": "~1.2.0", "repository": helm_repo.url},
            {"name": "cache", "version": "0.3.1", "repository": f"oci://{oci_tls.host}/charts"},
        ],
    )
    assert _build(tmp_path, chart) == ["cache-0.3.1.tgz", "web-1.2.3.tgz"]
    assert not (chart / "charts").exists()  # the exported tree is never written
    # built once: the same dependency files need no server
    monkeypatch.setenv("SSL_CERT_FILE", os.devnull)
    assert _build(tmp_path, chart) == ["cache-0.3.1.tgz", "web-1.2.3.tgz"]
    _no_half_written(tmp_path / "cache")


def test_file_dependencies_beside_remote_ones(helm_repo: registry.HelmRepo, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    common = tree / "charts" / "common"
    (common / "templates").mkdir(parents=True)
    (common / "Chart.yaml").write_text("apiVersion: v2\nname: common\nversion: 0.0.1\n")
    chart = _wrapper_chart(
        tree,
        [
            {"name": "common", "version": "0.0.1", "repository": "file://../common"},
            {"name": "web", "version": "1.2.3", "repository": helm_repo.url},
        ],
    )
    assert _build(tmp_path, chart) == ["common-0.0.1.tgz", "web-1.2.3.tgz"]


def test_working_tree_dependencies_are_not_cached(
    helm_repo: registry.HelmRepo, tmp_path: Path
) -> None:
    chart = _wrapper_chart(
        tmp_path / "tree", [{"name": "web", "version": "1.2.3", "repository": helm_repo.url}]
    )
    built = _charts(tmp_path).build_dependencies(
        chart, chart.parents[1], "charts/shop", policy=None, pass_credentials=False, revision=None
    )
    assert sorted(p.name for p in (built / "charts").iterdir()) == ["web-1.2.3.tgz"]
    assert not (tmp_path / "cache" / "charts").exists() or not [
        p for p in (tmp_path / "cache" / "charts").iterdir() if not p.name.startswith(".tmp-")
    ]


def test_concurrent_pulls_share_one_entry(helm_repo: registry.HelmRepo, tmp_path: Path) -> None:
    import concurrent.futures

    source = charts.classify(helm_repo.url, "web")
    assert source is not None
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        pulled = list(pool.map(lambda _: _charts(tmp_path).pull(source, "2.0.0"), range(4)))
    assert len({p.directory for p in pulled}) == 1
    _no_half_written(tmp_path / "cache")
    assert len(list((tmp_path / "cache" / "charts").iterdir())) == 1


def test_dependency_repository_by_alias(
    helm_repo: registry.HelmRepo, tmp_path: Path, helm_config: Path
) -> None:
    helm_config.mkdir(parents=True)
    (helm_config / "repositories.yaml").write_text(
        yaml.safe_dump({"repositories": [{"name": "team", "url": helm_repo.url}]})
    )
    chart = _wrapper_chart(
        tmp_path / "tree",
        [
            {"name": "web", "version": "1.2.0", "repository": "@team"},
            {"name": "cache", "version": "0.3.1", "repository": "alias:team"},
        ],
    )
    assert _build(tmp_path, chart) == ["cache-0.3.1.tgz", "web-1.2.0.tgz"]


def test_unknown_alias_is_an_error(tmp_path: Path) -> None:
    chart = _wrapper_chart(
        tmp_path / "tree", [{"name": "web", "version": "1.2.0", "repository": "@nowhere"}]
    )
    with pytest.raises(SourceError, match=r"@nowhere names a repository that is not in your helm"):
        _build(tmp_path, chart)


def test_dependency_repos_the_project_does_not_permit(
    private_repo: registry.HelmRepo,
    oci_auth: registry.Registry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    helm_config: Path,
) -> None:
    """Argo CD gives the repo-server only the credentials of repositories the project permits;
    a build that then fails names them (its e2e TestHelmDependenciesPermissionDenied)."""
    _trust(oci_auth, monkeypatch)
    _login(oci_auth, helm_config, USERS["alice"])
    (helm_config / "repositories.yaml").write_text(
        yaml.safe_dump(
            {
                "repositories": [
                    {
                        "name": "p",
                        "url": private_repo.url,
                        "username": "alice",
                        "password": "wonderland",
                    }
                ]
            }
        )
    )
    oci = f"oci://{oci_auth.host}/charts"
    chart = _wrapper_chart(
        tmp_path / "tree",
        [
            {"name": "web", "version": "1.2.3", "repository": private_repo.url},
            {"name": "cache", "version": "0.3.1", "repository": oci},
        ],
    )
    permitted = charts.RepoPolicy("team", (private_repo.url, f"{oci_auth.host}/charts"))
    assert _build(tmp_path / "a", chart, permitted) == ["cache-0.3.1.tgz", "web-1.2.3.tgz"]
    only_git = charts.RepoPolicy("team", ("https://github.com/org/*",))
    with pytest.raises(SourceError) as info:
        _build(tmp_path / "b", chart, only_git)
    assert info.value.message == (
        "source path charts/shop: helm dependency build: helm repos "
        f"{private_repo.url}, {oci_auth.host}/charts are not permitted in project 'team'"
    )
    _no_half_written(tmp_path / "b" / "cache")


def test_public_dependency_repos_render_even_if_not_permitted(
    helm_repo: registry.HelmRepo, tmp_path: Path
) -> None:
    """As in Argo CD: without credentials the download still works, so nothing fails."""
    chart = _wrapper_chart(
        tmp_path / "tree", [{"name": "web", "version": "1.2.3", "repository": helm_repo.url}]
    )
    only_git = charts.RepoPolicy("team", ("https://github.com/org/*",))
    assert _build(tmp_path, chart, only_git) == ["web-1.2.3.tgz"]


# ----------------------------------------------------------------------------- through the CLI


def _snapshot(path: Path, source: dict[str, object], project: list[str] | None = None) -> Path:
    items: list[dict[str, object]] = [
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "web", "namespace": "argocd"},
            "spec": {
                "project": "team" if project is not None else "default",
                "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
                "source": source,
            },
            "status": {"sync": {"status": "Synced"}},
        }
    ]
    if project is not None:
        items.append(
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "AppProject",
                "metadata": {"name": "team", "namespace": "argocd"},
                "spec": {"sourceRepos": project},
            }
        )
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def _cli_error(run_cli, snapshot: Path, *extra: str) -> str:  # type: ignore[no-untyped-def]
    result = run_cli(["web", "--snapshot", str(snapshot), "--no-entry-points", *extra])
    assert result.exit_code == 3, result.stdout + result.stderr
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    return first


def test_cli_chart_version_that_does_not_exist(
    run_cli, helm_repo: registry.HelmRepo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    snap = _snapshot(
        tmp_path / "s.yaml", {"repoURL": helm_repo.url, "chart": "web", "targetRevision": "7.0.0"}
    )
    assert _cli_error(run_cli, snap) == (
        f"error: helm chart web 7.0.0 from {helm_repo.url}: version not found: the repository "
        "index has no web-7.0.0"
    )


def test_cli_registry_401(
    run_cli, oci_auth: registry.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    _trust(oci_auth, monkeypatch)
    snap = _snapshot(
        tmp_path / "s.yaml",
        {"repoURL": f"{oci_auth.host}/charts", "chart": "web", "targetRevision": "1.2.3"},
    )
    assert _cli_error(run_cli, snap).startswith(
        f"error: helm chart web 1.2.3 from {oci_auth.host}/charts: 401 Unauthorized"
    )


def test_cli_chart_repo_the_project_does_not_permit(
    run_cli, helm_repo: registry.HelmRepo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    snap = _snapshot(
        tmp_path / "s.yaml",
        {"repoURL": helm_repo.url, "chart": "web", "targetRevision": "1.2.3"},
        project=["https://github.com/org/*"],
    )
    assert _cli_error(run_cli, snap) == (
        f"error: application repo {helm_repo.url} is not permitted in project 'team'"
    )


def test_cli_offline_uses_only_the_cache(
    run_cli, helm_repo: registry.HelmRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KUBECTL_GITDRIFT_CACHE_DIR", str(tmp_path / "cache"))
    snap = _snapshot(
        tmp_path / "s.yaml", {"repoURL": helm_repo.url, "chart": "web", "targetRevision": "1.2.0"}
    )
    assert _cli_error(run_cli, snap, "--offline") == (
        f"error: helm chart web 1.2.0 from {helm_repo.url}: --offline, and the cache does not "
        "hold it"
    )
    online = run_cli(["web", "--snapshot", str(snap), "--no-entry-points"])
    assert online.exit_code == 1, online.stderr  # rendered: the objects are missing live
    offline = run_cli(["web", "--snapshot", str(snap), "--no-entry-points", "--offline"])
    assert (offline.exit_code, offline.stdout) == (1, online.stdout)


def test_cli_dependency_repo_the_project_does_not_permit(
    run_cli,
    private_repo: registry.HelmRepo,
    tmp_path: Path,
    helm_config: Path,
) -> None:  # type: ignore[no-untyped-def]
    helm_config.mkdir(parents=True)
    (helm_config / "repositories.yaml").write_text(
        yaml.safe_dump(
            {
                "repositories": [
                    {
                        "name": "p",
                        "url": private_repo.url,
                        "username": "alice",
                        "password": "wonderland",
                    }
                ]
            }
        )
    )
    repo = tmp_path / "repo"
    _wrapper_chart(repo, [{"name": "web", "version": "1.2.3", "repository": private_repo.url}])
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "shop"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    url = "https://git.example.com/org/shop.git"
    source = {"repoURL": url, "path": "charts/shop", "targetRevision": "main"}
    permitted = run_cli(
        ["web", "--snapshot", str(_snapshot(tmp_path / "a.yaml", source, [url, private_repo.url])),
         "--repo-root", str(repo), "--no-entry-points"]
    )  # fmt: skip
    assert permitted.exit_code == 1, permitted.stderr  # rendered; nothing is live
    denied = _snapshot(tmp_path / "b.yaml", source, [url])
    assert _cli_error(run_cli, denied, "--repo-root", str(repo), "--no-cache") == (
        "error: source path charts/shop: helm dependency build: helm repos "
        f"{private_repo.url} are not permitted in project 'team'"
    )


def _git_repo(repo: Path, remote: str) -> Path:
    """A clone with one directory source (`site/`) and `origin` at `remote`."""
    (repo / "site").mkdir(parents=True)
    (repo / "site" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: site\n  namespace: web\ndata: {}\n"
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", "site"],
        ["remote", "add", "origin", remote],
    ):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return repo


def _app(name: str, sources: list[dict[str, object]]) -> dict[str, object]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd"},
        "spec": {
            "project": "default",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
            "sources": sources,
        },
        "status": {"sync": {"status": "Synced"}},
    }


def test_cli_all_with_repo_root_renders_registry_only_apps(
    run_cli, helm_repo: registry.HelmRepo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """`--all --repo-root DIR` skips apps of other git repositories; an app whose only source is
    a registry chart needs no clone, so it renders (the chart is pulled)."""
    url = "https://git.example.com/org/site.git"
    repo = _git_repo(tmp_path / "repo", url)
    apps = [
        _app("chart", [{"repoURL": helm_repo.url, "chart": "web", "targetRevision": "1.2.0"}]),
        _app("site", [{"repoURL": url, "path": "site", "targetRevision": "main"}]),
        _app("other", [{"repoURL": "https://git.example.com/org/other.git", "path": "x"}]),
    ]
    snap = tmp_path / "s.yaml"
    snap.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": apps}))
    result = run_cli(
        ["--all", "--snapshot", str(snap), "--repo-root", str(repo), "--no-entry-points",
         "-o", "json"]
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr  # rendered: nothing of it is live
    report = json.loads(result.stdout)
    skipped = {s["application"] for s in report["skipped"]}
    assert skipped == {"argocd/other"}
    rendered = json.dumps(report)
    assert "ConfigMap" in rendered
    assert "Deployment" in rendered


def test_cli_oci_artifact_beside_a_git_source_under_repo_root(
    run_cli, oci_tls: registry.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """An `oci://` artifact (no `chart:`) is no git repository: --repo-root need not be a clone
    of it, with one git source beside it (in the clone, which has no remote, or has one)."""
    _trust(oci_tls, monkeypatch)
    url = "https://git.example.com/org/site.git"
    sources: list[dict[str, object]] = [
        {"repoURL": f"oci://{oci_tls.host}/charts/cache", "targetRevision": "0.3.1", "path": "."},
        {"repoURL": url, "path": "site", "targetRevision": "main"},
    ]
    snap = tmp_path / "s.yaml"
    snap.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [_app("web", sources)]})
    )
    repo = _git_repo(tmp_path / "repo", url)
    for root in (str(repo), f"{url}={repo}"):
        result = run_cli(["web", "--snapshot", str(snap), "--repo-root", root, "--no-entry-points"])
        assert result.exit_code == 1, result.stderr  # rendered: nothing of it is live
        assert "site" in result.stdout
        assert "cache" in result.stdout
    subprocess.run(["git", "-C", str(repo), "remote", "remove", "origin"], check=True)
    result = run_cli(
        ["web", "--snapshot", str(snap), "--repo-root", str(repo), "--no-entry-points"]
    )
    assert result.exit_code == 1, result.stderr


def test_registry_sources_are_never_git_clones() -> None:
    assert charts.is_registry("https://charts.example.com", "web")
    assert charts.is_registry("ghcr.io/org/charts", "web")
    assert charts.is_registry("OCI://ghcr.io/org/charts/web", "")
    assert not charts.is_registry("https://github.com/org/repo.git", "")
    assert not charts.is_registry("git@github.com:org/repo.git", "")


def test_one_clone_renders_git_sources_beside_an_oci_artifact(tmp_path: Path) -> None:
    """render's LocalClone (every source from one clone) checks only git repositories."""
    from kubectl_gitdrift.model import AppSource
    from kubectl_gitdrift.sources import render

    repo = _git_repo(tmp_path / "repo", "https://git.example.com/org/site.git")
    subprocess.run(["git", "-C", str(repo), "remote", "remove", "origin"], check=True)
    sources = [
        AppSource("oci://registry.example.com/charts/cache", path=".", target_revision="0.3.1"),
        AppSource("https://git.example.com/org/site.git", path="site", target_revision="main"),
    ]
    render.LocalClone(repo, sources)  # no error: the artifact needs no clone
    with pytest.raises(SourceError, match="is not a clone of"):
        render.LocalClone(repo, [*sources, AppSource("https://git.example.com/org/b.git", "x")])


def test_a_build_replaces_outdated_vendored_archives_as_helm_does(
    helm_repo: registry.HelmRepo, tmp_path: Path
) -> None:
    """`helm dependency build` deletes chart archives in charts/ that it did not download
    (outdated versions), keeping directories and repository-less dependencies; the built copy
    is the same, whether built now or taken from the cache."""
    tree = tmp_path / "tree"
    chart = _wrapper_chart(
        tree,
        [
            {"name": "web", "version": "1.2.3", "repository": helm_repo.url},
            {"name": "cache", "version": "0.3.1", "repository": helm_repo.url},
            {"name": "local", "version": "0.0.1"},  # vendored: no repository
        ],
    )
    env = registry.helm_env(tmp_path / "helm-home")
    vendored = chart / "charts"
    registry.package_charts(CHARTS / "web-1.2.0", vendored, env)  # an outdated version
    (vendored / "local" / "templates").mkdir(parents=True)
    (vendored / "local" / "Chart.yaml").write_text("apiVersion: v2\nname: local\nversion: 0.0.1\n")
    before = sorted(p.name for p in vendored.iterdir())
    expected = ["cache-0.3.1.tgz", "local", "web-1.2.3.tgz"]
    assert _build(tmp_path, chart) == expected
    assert _build(tmp_path, chart) == expected  # from the cache
    assert sorted(p.name for p in vendored.iterdir()) == before  # the tree is never written


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://bob:p@ss@charts.example.com/x", "https://***@charts.example.com/x"),
        ("bob:s3cret@ghcr.io/org/charts", "***@ghcr.io/org/charts"),
        ('Get "oci://bob:s3cret@h/v2/": 401', 'Get "oci://***@h/v2/": 401'),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
        ("127.0.0.1:5000/charts/web:1.2.3", "127.0.0.1:5000/charts/web:1.2.3"),
    ],
)
def test_every_form_of_url_credentials_is_masked(text: str, shown: str) -> None:
    assert charts.redact(text) == shown


def test_chart_errors_never_show_url_credentials(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        charts.classify("ftp://bob:s3cret@charts.example.com", "web")
    assert "s3cret" not in info.value.message
    source = charts.classify("bob:s3cret@127.0.0.1:9/charts", "web")  # OCI, no scheme
    assert source is not None
    assert "s3cret" not in source.describe("1.0.0")
    chart = _wrapper_chart(
        tmp_path / "tree",
        [{"name": "web", "version": "1.2.3", "repository": "https://bob:s3cret@h.example/c"}],
    )
    binary = helm.helm_binary()
    assert binary is not None
    offline = charts.Charts(tmp_path / "cache", tmp_path / "work", binary, offline=True)
    with pytest.raises(SourceError) as info:
        offline.build_dependencies(
            chart, chart.parents[1], "charts/shop", policy=None, pass_credentials=False,
            revision="0" * 40,
        )  # fmt: skip
    assert "https://***@h.example/c" in info.value.message
    assert "s3cret" not in info.value.message
    with pytest.raises(SourceError) as info:  # no chart fetching: the refusal masks it too
        helm._missing_dependencies(
            chart, "charts/shop", yaml.safe_load((chart / "Chart.yaml").read_text()), fail=True
        )
    assert "s3cret" not in info.value.message


def _manifest_digest(reg: registry.Registry, name: str, tag: str) -> str:
    """The registry's digest for `name:tag` (what Argo CD records as an OCI source's revision)."""
    import ssl
    import urllib.request

    assert reg.ca is not None
    request = urllib.request.Request(
        f"https://{reg.host}/v2/{name}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    context = ssl.create_default_context(cafile=str(reg.ca.ca_file))
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return str(response.headers["Docker-Content-Digest"])


def test_oci_artifact_pulled_by_the_digest_argo_cd_compared(
    oci_tls: registry.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _trust(oci_tls, monkeypatch)
    digest = _manifest_digest(oci_tls, "charts/cache", "0.3.1")
    artifact = charts.classify(f"oci://{oci_tls.host}/charts/cache", "")
    assert artifact is not None
    pulled = _charts(tmp_path).pull(artifact, digest)
    assert pulled.version == "0.3.1"
    monkeypatch.setenv("SSL_CERT_FILE", os.devnull)  # a digest is exact: cached, no network
    assert _charts(tmp_path).pull(artifact, digest) == pulled
    _no_half_written(tmp_path / "cache")


def test_cli_oci_repo_url_with_chart_is_the_artifact_as_in_argo_cd(
    run_cli, oci_tls: registry.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Argo CD 3.1+ pulls `oci://host/charts` itself and never reads `chart:`: no chart is there,
    so the render fails as Argo CD's does, and the hint says how to write it."""
    _trust(oci_tls, monkeypatch)
    source = {"repoURL": f"oci://{oci_tls.host}/charts", "chart": "web", "targetRevision": "1.2.3"}
    result = run_cli(
        ["web", "--snapshot", str(_snapshot(tmp_path / "s.yaml", source)), "--no-entry-points"]
    )
    assert result.exit_code == 3, result.stdout + result.stderr
    first, hint = result.stderr.splitlines()[:2]
    assert first.startswith(f"error: helm chart oci://{oci_tls.host}/charts 1.2.3: ")
    assert "ignores chart: web" in hint
    fixed = {"repoURL": f"{oci_tls.host}/charts", "chart": "web", "targetRevision": "1.2.3"}
    result = run_cli(
        ["web", "--snapshot", str(_snapshot(tmp_path / "t.yaml", fixed)), "--no-entry-points"]
    )
    assert result.exit_code == 1, result.stderr


def test_dependency_ranges_without_a_lock_resolve_per_commit(tmp_path: Path) -> None:
    """Without Chart.lock, `~1.2.0` is what the repository has when a commit is rendered (Argo
    CD caches manifests per commit): a new commit sees a newer version, the old one keeps its
    build; with exact versions the build is shared across commits."""
    src = tmp_path / "src"
    shutil.copytree(CHARTS / "web-1.2.0", src / "web-1.2.0")
    repo = registry.serve_helm_repo(src, tmp_path / "repo")
    try:
        chart = _wrapper_chart(
            tmp_path / "tree", [{"name": "web", "version": "~1.2.0", "repository": repo.url}]
        )

        def build(revision: str) -> list[str]:
            built = _charts(tmp_path).build_dependencies(
                chart, chart.parents[1], "charts/shop", policy=None, pass_credentials=False,
                revision=revision,
            )  # fmt: skip
            return sorted(p.name for p in (built / "charts").iterdir())

        assert build("a" * 40) == ["web-1.2.0.tgz"]
        env = registry.helm_env(tmp_path / "helm-home")
        registry.package_charts(CHARTS / "web-1.2.3", repo.directory, env)  # published later
        repo.index(env)
        assert build("b" * 40) == ["web-1.2.3.tgz"]
        assert build("a" * 40) == ["web-1.2.0.tgz"]  # that commit's build, from the cache
    finally:
        repo.stop()


def test_registry_charts_get_the_destination_clusters_version(tmp_path: Path) -> None:
    """As git charts do (Argo CD's GetKubeVersionOrDefault): helm renders a registry chart for
    the destination cluster's version unless the source sets kubeVersion."""
    from kubectl_gitdrift import application
    from kubectl_gitdrift.sources import config as render_config
    from kubectl_gitdrift.sources import fetch, render

    src = tmp_path / "src" / "caps"
    (src / "templates").mkdir(parents=True)
    (src / "Chart.yaml").write_text("apiVersion: v2\nname: caps\nversion: 0.1.0\n")
    (src / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\n"
        "data:\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
    )
    repo = registry.serve_helm_repo(tmp_path / "src", tmp_path / "repo")
    try:
        for helm_options, want in (({}, "v1.31.2"), ({"kubeVersion": "1.29.0"}, "v1.29.0")):
            source = {"repoURL": repo.url, "chart": "caps", "targetRevision": "0.1.0"}
            if helm_options:
                source["helm"] = helm_options  # type: ignore[assignment]
            app = application.parse_application(
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Application",
                    "metadata": {"name": "caps", "namespace": "argocd"},
                    "spec": {"destination": {"namespace": "caps"}, "source": source},
                }
            )
            rendered = render.render(
                app,
                None,
                workdir=tmp_path / "work",
                repos=fetch.Repos(tmp_path / "git"),
                config=render_config.RenderConfig(kube_version="v1.31.2"),
            )
            (manifest,) = rendered.manifests
            assert manifest.body["data"] == {"kube": want}
    finally:
        repo.stop()
