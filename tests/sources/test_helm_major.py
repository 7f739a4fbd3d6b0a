"""Which helm major a helm source renders with (sources/tools.choose_helm): the one the app's
Argo CD bundles, read from the argocd-repo-server image (sources/config.argocd_version_of), or
--helm-version; a helm 3 found as $KUBECTL_GITDRIFT_HELM3, `helm3` on PATH, or a v3 `helm`.

The binaries here are scripts that answer `version --short` as helm does; no helm runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_gitdrift.cli import parser, requests
from kubectl_gitdrift.errors import UsageError
from kubectl_gitdrift.settings import HELM3_ENV, HELM_ENV, HELM_VERSION_ENV, Settings
from kubectl_gitdrift.sources import config, tools


@pytest.mark.parametrize(
    ("argocd", "major"),
    [
        ("v2.14.0", "3"),  # hack/tool-versions.sh: helm3_version=3.16.3
        ("v3.0.23", "3"),  # 3.17.1
        ("v3.1.5", "3"),  # 3.18.4
        ("v3.4.7", "3"),  # 3.19.4, the last helm 3
        ("v3.5.0-rc1", "4"),  # helm4_version=4.2.1
        ("v3.5.1", "4"),
        ("3.6", "4"),
        ("v4.0.0", "4"),
        ("", ""),
        ("latest", ""),
    ],
)
def test_argocd_release_to_the_helm_major_it_bundles(argocd: str, major: str) -> None:
    assert tools.argocd_helm_major(argocd) == major


def test_argocd_release_to_the_helm_it_bundles() -> None:
    assert tools.argocd_helm("v3.1.5") == "v3.18.4"
    assert tools.argocd_helm("v3.4.7") == "v3.19.4"
    assert tools.argocd_helm("v3.5.0-rc1") == "v4.2.1"
    assert tools.argocd_helm("v2.14.11") == "3"  # a patch may bump helm in 2.x: only the major
    assert tools.argocd_helm("v3.9.0") == "4"


def _deployment(image: str, container: str = "argocd-repo-server") -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "argocd-repo-server", "namespace": "argocd"},
        "spec": {"template": {"spec": {"containers": [{"name": container, "image": image}]}}},
    }


def _argocd_cm(version: str) -> dict[str, object]:
    labels = {"app.kubernetes.io/version": version} if version else {}
    return {"kind": "ConfigMap", "metadata": {"name": "argocd-cm", "labels": labels}}


def test_argocd_version_from_the_argocd_cm_label_then_the_repo_server_image() -> None:
    # the label first: a live run has argocd-cm anyway and reads the Deployment only when the
    # label is silent; a snapshot holding both must decide as that run did
    image = _deployment("quay.io/argoproj/argocd:v3.1.5")
    assert config.argocd_version_of([_argocd_cm("v2.14.0"), image]) == "v2.14.0"
    assert config.argocd_version_of([image, _argocd_cm("v2.14.0")]) == "v2.14.0"
    assert config.argocd_version_of([_argocd_cm(""), image]) == "v3.1.5"
    digest = _deployment("quay.io/argoproj/argocd:v3.5.0@sha256:" + "a" * 64)
    assert config.argocd_version_of([digest]) == "v3.5.0"
    registry = _deployment("registry.local:5000/argocd:v3.0.6", container="repo-server")
    assert config.argocd_version_of([registry]) == "v3.0.6"
    untagged = _deployment("quay.io/argoproj/argocd")
    assert config.argocd_version_of([untagged, _argocd_cm("v3.2.1")]) == "v3.2.1"
    assert config.argocd_version_of([_argocd_cm("")]) == ""
    assert config.of([image]).argocd_version == "v3.1.5"
    assert config.of([]).argocd_version == ""


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("quay.io/argoproj/argocd:v3.5.1", "v3.5.1"),
        ("quay.io/argoproj/argocd:v3.5.0-rc1", "v3.5.0-rc1"),
        ("quay.io/argoproj/argocd:v3.1.5@sha256:" + "0" * 64, "v3.1.5"),
        ("registry.local:5000/argoproj/argocd:v3.0.6", "v3.0.6"),
        ("registry.local:5000/argoproj/argocd", ""),  # the port is no tag
        ("quay.io/argoproj/argocd@sha256:" + "1" * 64, ""),  # a digest alone
        ("quay.io/argoproj/argocd:latest", ""),
        ("ghcr.io/acme/argocd:3.4.2", "3.4.2"),
        ("", ""),
    ],
)
def test_the_release_an_image_tag_names(image: str, version: str) -> None:
    assert tools.image_version(image) == version


def _fake_helm(directory: Path, name: str, version: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho {version}\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def binaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """helm (v4.1.4) and helm3 (v3.17.3) alone on PATH."""
    bin_dir = tmp_path / "bin"
    found = {
        "helm": _fake_helm(bin_dir, "helm", "v4.1.4+g05fa379"),
        "helm3": _fake_helm(bin_dir, "helm3", "v3.17.3+ge4da497"),
    }
    monkeypatch.setenv("PATH", str(bin_dir))
    return found


def test_the_argocd_version_picks_the_major(binaries: dict[str, str]) -> None:
    settings = Settings.from_environ({})
    three = tools.choose_helm(settings, "v3.1.5")
    assert three == tools.HelmChoice(
        binaries["helm3"], "rendered with helm v3.17.3 (Argo CD v3.1 bundles helm v3.18.4)"
    )
    four = tools.choose_helm(settings, "v3.5.0")
    assert four == tools.HelmChoice(
        binaries["helm"], "rendered with helm v4.1.4 (Argo CD v3.5 bundles helm v4.2.1)"
    )
    assert tools.choose_helm(settings, "") == tools.HelmChoice(binaries["helm"])  # as before


def test_helm_version_setting_wins_over_argocd(binaries: dict[str, str]) -> None:
    settings = Settings.from_environ({HELM_VERSION_ENV: "4"})
    choice = tools.choose_helm(settings, "v3.1.5")
    assert choice == tools.HelmChoice(
        binaries["helm"], "rendered with helm v4.1.4 (--helm-version 4)"
    )
    assert tools.choose_helm(settings.with_helm_version("3"), "").binary == binaries["helm3"]
    with pytest.raises(UsageError, match="expected 3 or 4"):
        tools.choose_helm(Settings.from_environ({HELM_VERSION_ENV: "2"}), "")


def test_helm3_lookup_order(tmp_path: Path, binaries: dict[str, str]) -> None:
    explicit = _fake_helm(tmp_path / "elsewhere", "my-helm", "v3.18.4+gabc")
    assert tools.helm3_binary(Settings.from_environ({HELM3_ENV: explicit})) == explicit
    assert tools.helm3_binary(Settings.from_environ({})) == binaries["helm3"]
    Path(binaries["helm3"]).unlink()
    assert tools.helm3_binary(Settings.from_environ({})) is None  # `helm` is a v4
    old = _fake_helm(tmp_path / "old", "helm", "v3.14.0+g1234")
    assert tools.helm3_binary(Settings.from_environ({HELM_ENV: old})) == old
    assert tools.helm4_binary(Settings.from_environ({HELM_ENV: old})) is None


def test_a_missing_major_renders_with_the_other_and_says_so(binaries: dict[str, str]) -> None:
    Path(binaries["helm3"]).unlink()
    choice = tools.choose_helm(Settings.from_environ({}), "v3.1.5")
    assert choice.binary == binaries["helm"]
    assert choice.note == (
        "rendered with helm v4.1.4, not helm 3 (Argo CD v3.1 bundles helm v3.18.4; no helm 3 "
        f"found: set ${HELM3_ENV} or put helm3 on PATH); the render may differ from Argo CD's"
    )


def test_only_a_helm3_renders_helm_4_apps_with_a_note(binaries: dict[str, str]) -> None:
    Path(binaries["helm"]).unlink()
    choice = tools.choose_helm(Settings.from_environ({}), "v3.5.0")
    assert choice.binary == binaries["helm3"]
    assert choice.note.startswith("rendered with helm v3.17.3, not helm 4 (Argo CD v3.5")


def test_no_helm_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert tools.choose_helm(Settings.from_environ({}), "v3.1.5") == tools.HelmChoice(None)


def test_helm_version_flag() -> None:
    args = parser.build_parser().parse_args(["app", "--helm-version", "3"])
    request = requests.request_from(args, settings=Settings.from_environ({}))
    assert request.settings.helm_version() == "3"
    plain = parser.build_parser().parse_args(["app"])
    assert requests.request_from(plain, settings=Settings.from_environ({})).settings.environ == {}


def test_the_repo_server_is_asked_only_when_nothing_else_decides(
    binaries: dict[str, str],
) -> None:
    asked: list[str] = []

    def read(image: str = "quay.io/argoproj/argocd:v3.1.5", unreadable: str = ""):  # type: ignore[no-untyped-def]
        def lookup() -> tools.RepoServer:
            asked.append(image)
            return tools.RepoServer(image, unreadable)

        return lookup

    settings = Settings.from_environ({})
    assert tools.choose_helm(settings, "v3.5.1", read()).binary == binaries["helm"]
    assert (
        tools.choose_helm(settings.with_helm_version("3"), "", read()).binary == (binaries["helm3"])
    )
    assert asked == []  # the label (argocd_version) or --helm-version decided
    choice = tools.choose_helm(settings, "", read())
    assert choice == tools.HelmChoice(
        binaries["helm3"], "rendered with helm v3.17.3 (Argo CD v3.1 bundles helm v3.18.4)"
    )
    assert asked == ["quay.io/argoproj/argocd:v3.1.5"]


def test_a_repo_server_that_cannot_be_read_is_the_default_helm_with_why(
    binaries: dict[str, str],
) -> None:
    settings = Settings.from_environ({})
    forbidden = tools.RepoServer("", "403 Forbidden: RBAC does not allow verb 'get'")
    choice = tools.choose_helm(settings, "", lambda: forbidden)
    assert choice == tools.HelmChoice(
        binaries["helm"],
        "rendered with helm v4.1.4, the default: which helm Argo CD bundles is unknown (the "
        "argocd-repo-server Deployment could not be read: 403 Forbidden: RBAC does not allow "
        "verb 'get'); --helm-version 3 or 4 chooses",
    )
    latest = tools.choose_helm(
        settings, "", lambda: tools.RepoServer("quay.io/argoproj/argocd:latest")
    )
    assert latest.binary == binaries["helm"]
    assert "the argocd-repo-server image quay.io/argoproj/argocd:latest names no version" in (
        latest.note
    )
