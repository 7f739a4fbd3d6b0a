"""repoURL fetching without --repo-root: a real `git daemon` on loopback serves the incident's
repository; gitdrift fetches it into a bare partial mirror in the cache, reuses it, works
offline from it, and fails in one line (exit 3) on an unreachable server or a revision that does
not exist, leaving nothing half-written."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.sources import fetch
from tests.conftest import FAST_RETRIES, ROOT, TESTDATA, Result, Runner, text_without_run_context
from tests.support.apiserver import KubeAPIServer, ServerFactory, kube_apiserver  # noqa: F401
from tests.support.gitdaemon import GitDaemon, GitHttp, free_port, git_env

INCIDENT = TESTDATA / "incident"
GITHUB_URL = "https://github.com/example/guestbook-gitops.git"
SYNCED = "9e83146dfad2a9f5bed0a3541370fd573772c6b3"  # status.sync.revision (make_repo's SHA)
FIRST = "b5d51b6a5e02c2441193ae88ad31ac406ad076e5"  # the first commit of the incident's repo
NAME = "guestbook-gitops.git"
Obj = dict[str, Any]


def git(repo: Path, *args: str) -> str:
    identity = ("-c", "user.name=T", "-c", "user.email=t@example.com")
    proc = subprocess.run(
        ["git", "-C", str(repo), *identity, *args],
        check=True,
        capture_output=True,
        text=True,
        env=git_env(),
    )
    return proc.stdout.strip()


@pytest.fixture
def clone(build_repo: Callable[[Path], Path]) -> Path:
    """The incident's repository (make_repo: the same SHAs everywhere), as a local clone."""
    return Path(build_repo(INCIDENT / "repo-src"))


@pytest.fixture
def daemon(tmp_path: Path, clone: Path) -> Iterator[GitDaemon]:
    with GitDaemon(tmp_path / "served") as server:
        server.serve(clone, NAME)
        yield server


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory for this test (cold)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("KUBECTL_GITDRIFT_CACHE_DIR", str(directory))
    return directory


def snapshot_for(tmp_path: Path, url: str, name: str = "snapshot.yaml") -> Path:
    """The incident's snapshot with the Application's repoURL pointing at `url`."""
    text = (INCIDENT / "snapshot.yaml").read_text().replace(GITHUB_URL, url)
    path = tmp_path / name
    path.write_text(text)
    return path


def offline(snapshot: Path, *extra: str) -> list[str]:
    return ["guestbook", "--snapshot", str(snapshot), "--no-entry-points", *extra]


def mirrors(cache: Path) -> list[str]:
    """What the cache's git directory holds (mirrors, locks, leftovers)."""
    root = cache / "git"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def one_line_error(result: Result, *needles: str) -> None:
    assert result.exit_code == ExitCode.ERROR, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], result.stderr
    assert all(line.startswith("  hint: ") for line in lines[1:]), result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------- offline snapshot


def test_snapshot_mode_fetches_repo_url_and_matches_a_clone(
    daemon: GitDaemon, cache: Path, clone: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    fetched = run_cli(offline(snap, "-o", "json"))
    assert fetched.exit_code == ExitCode.DRIFT, fetched.stderr
    assert fetched.stderr == ""
    assert daemon.requests() == 2  # the synced commit (commits and trees), then its files
    from_clone = run_cli(offline(snap, "-o", "json", "--repo-root", str(clone)))
    # the same report, but for the --repo-root its suggested commands repeat
    assert json.loads(text_without_run_context(fetched.stdout)) == json.loads(
        text_without_run_context(from_clone.stdout)
    )
    report = json.loads(fetched.stdout)["applications"][0]
    assert report["sync"]["revision"] == SYNCED

    # one bare mirror, owner-only, with no URL stored in it; the lock beside it
    (mirror,) = [n for n in mirrors(cache) if n.endswith(".git")]
    assert mirror.startswith("guestbook-gitops-")
    assert mirrors(cache) == sorted([mirror, mirror.removesuffix(".git") + ".lock"])
    assert (cache / "git").stat().st_mode & 0o777 == 0o700
    assert cache.stat().st_mode & 0o777 == 0o700
    assert git(cache / "git" / mirror, "rev-parse", "--is-bare-repository") == "true"
    assert "url" not in git(cache / "git" / mirror, "config", "--list")
    assert git(cache / "git" / mirror, "config", "extensions.partialClone") == "origin"


def test_second_run_makes_no_network_access(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    first = run_cli(offline(snap, "-o", "json"))
    assert first.exit_code == ExitCode.DRIFT, first.stderr
    before = daemon.requests()
    again = run_cli(offline(snap, "-o", "json"))
    assert again.exit_code == ExitCode.DRIFT, again.stderr
    assert again.stdout == first.stdout
    assert daemon.requests() == before
    # an older commit of the same repository: fetched once, then not again
    older = run_cli(offline(snap, "--revision", FIRST))
    assert older.exit_code == ExitCode.DRIFT, older.stderr
    assert daemon.requests() == before + 1  # its commit came with the first: only its files
    run_cli(offline(snap, "--revision", FIRST))
    assert daemon.requests() == before + 1


def test_fetching_is_a_phase_of_its_own_in_progress(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """What the apps need is fetched before rendering, shown as a `fetching` phase (a first
    clone can take a while); a warm run has nothing to fetch and shows no such phase."""
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    result = run_cli(offline(snap, "--progress", "--revision", "main"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert f"gitdrift: fetching 1/1 {daemon.url(NAME)} main\n" in result.stderr
    assert result.stderr.index("fetching 1/1") < result.stderr.index("rendering 1/1")
    assert daemon.requests() == 3  # ls-remote, the branch, its files: rendering fetched nothing
    again = run_cli(offline(snap, "--progress"))  # the synced commit, in the mirror
    assert "gitdrift: fetching" not in again.stderr
    assert daemon.requests() == 3


def test_no_cache_fetches_into_the_run_and_keeps_nothing(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    for _ in range(2):  # --no-cache writes nothing: each run fetches into its own temp dir
        result = run_cli(offline(snap, "--no-cache"))
        assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert not cache.exists()
    assert daemon.requests() == 4


def test_branch_tag_head_and_short_sha_resolve_like_the_repo_server(
    daemon: GitDaemon, cache: Path, clone: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    served = daemon.base / NAME
    git(served, "tag", "v1.0.0", FIRST)
    git(served, "tag", "-a", "-m", "annotated", "v2.0.0", SYNCED)
    git(served, "branch", "release", FIRST)
    snap = snapshot_for(tmp_path, daemon.url(NAME))

    def rendered(revision: str) -> str:
        result = run_cli(offline(snap, "-o", "json", "--revision", revision))
        assert result.exit_code in (ExitCode.OK, ExitCode.DRIFT), result.stderr
        return str(json.loads(result.stdout)["applications"][0]["sync"]["revision"])

    assert rendered("main") == SYNCED
    assert rendered("HEAD") == SYNCED
    assert rendered("refs/heads/release") == FIRST
    assert rendered("release") == FIRST
    assert rendered("v1.0.0") == FIRST
    assert rendered("v2.0.0") == SYNCED  # an annotated tag, peeled to its commit
    assert rendered(FIRST[:9]) == FIRST  # a commit id prefix, as Argo CD allows

    # the branch moves on the server: the next run sees it (ls-remote), fetches the new commit
    git(served, "update-ref", "refs/heads/release", SYNCED)
    assert rendered("release") == SYNCED

    # offline, HEAD is what the last fetch saw; a server whose HEAD is detached works too
    assert rendered_offline(run_cli, snap, "HEAD") == SYNCED
    git(served, "update-ref", "--no-deref", "HEAD", FIRST)
    assert rendered("HEAD") == FIRST
    assert rendered_offline(run_cli, snap, "HEAD") == FIRST
    assert rendered_offline(run_cli, snap, "main") == SYNCED


def rendered_offline(run_cli: Callable[..., Result], snap: Path, revision: str) -> str:
    result = run_cli(offline(snap, "-o", "json", "--offline", "--revision", revision))
    assert result.exit_code in (ExitCode.OK, ExitCode.DRIFT), result.stderr
    return str(json.loads(result.stdout)["applications"][0]["sync"]["revision"])


# ---------------------------------------------------------------------------- --offline


def test_offline_with_an_empty_cache_names_the_source_and_revision(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    url = daemon.url(NAME)
    result = run_cli(offline(snapshot_for(tmp_path, url), "--offline"))
    one_line_error(result, "argocd/guestbook", url, SYNCED, "--offline")
    assert daemon.requests() == 0
    assert [n for n in mirrors(cache) if n.endswith(".git")] == []


def test_offline_uses_what_an_earlier_run_fetched(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    online = run_cli(offline(snap, "--revision", "main", "-o", "json"))
    assert online.exit_code == ExitCode.DRIFT, online.stderr
    before = daemon.requests()
    for revision in (SYNCED, "main", SYNCED[:10]):
        result = run_cli(offline(snap, "--offline", "--revision", revision, "-o", "json"))
        assert result.exit_code == ExitCode.DRIFT, result.stderr
    # a revision never fetched: an error naming it, still no network
    missing = run_cli(offline(snap, "--offline", "--revision", FIRST))
    one_line_error(missing, daemon.url(NAME), FIRST)
    assert daemon.requests() == before


# ---------------------------------------------------------------------------- bad input


def test_unreachable_server_is_one_line_and_leaves_nothing(
    cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    url = f"git://127.0.0.1:{free_port()}/{NAME}"  # nobody listens there
    result = run_cli(offline(snapshot_for(tmp_path, url)))
    one_line_error(result, "argocd/guestbook", url, "Connection refused")
    assert [n for n in mirrors(cache) if not n.endswith(".lock")] == []


def test_missing_repository_quotes_the_server(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    url = daemon.url("no-such-repo.git")
    result = run_cli(offline(snapshot_for(tmp_path, url)))
    one_line_error(result, "argocd/guestbook", url, "no-such-repo.git")
    assert [n for n in mirrors(cache) if not n.endswith(".lock")] == []


@pytest.mark.parametrize(
    "revision",
    ["no-such-branch", "0123456789abcdef0123456789abcdef01234567", "abcdef0"],
    ids=["branch", "commit", "prefix"],
)
def test_revision_that_does_not_exist(
    revision: str,
    daemon: GitDaemon,
    cache: Path,
    tmp_path: Path,
    run_cli: Callable[..., Result],
) -> None:
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    result = run_cli(offline(snap, "--revision", revision))
    one_line_error(result, "argocd/guestbook", daemon.url(NAME), revision, "not found")
    assert [n for n in mirrors(cache) if not n.endswith(".lock")] == []  # cold: no mirror
    # with a mirror already there, it is left as it was (and still works)
    assert run_cli(offline(snap)).exit_code == ExitCode.DRIFT
    kept = [n for n in mirrors(cache) if n.endswith(".git")]
    result = run_cli(offline(snap, "--revision", revision))
    one_line_error(result, daemon.url(NAME), revision)
    assert [n for n in mirrors(cache) if n.endswith(".git")] == kept
    assert run_cli(offline(snap, "--offline")).exit_code == ExitCode.DRIFT


def test_a_repo_url_that_would_run_a_command_is_refused(
    cache: Path, tmp_path: Path, run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ext::` runs a command; an Application is not trusted to make gitdrift run one, even
    when the user's own config allows the transport."""
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[protocol]\n\tallow = always\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    marker = tmp_path / "ran"
    url = f"ext::sh -c touch% {marker}"
    result = run_cli(offline(snapshot_for(tmp_path, url)))
    one_line_error(result, "argocd/guestbook", "transport 'ext' not allowed")
    assert not marker.exists()
    # nor can a newline in it smuggle configuration in
    sneaky = "https://git.example.com/r.git\n[core]\n\tsshCommand = touch " + str(marker)
    doc = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())
    app = next(o for o in doc["items"] if o["kind"] == "Application")
    app["spec"]["source"]["repoURL"] = sneaky
    snap = tmp_path / "sneaky.yaml"
    snap.write_text(yaml.safe_dump(doc))
    result = run_cli(offline(snap))
    one_line_error(result, "argocd/guestbook", "control characters")
    assert not marker.exists()


def test_a_semver_constraint_on_git_tags_is_said_not_guessed(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """Argo CD resolves `>=1.0.0 <2` on git tags to the highest matching tag; gitdrift does not
    (yet): an error that says so, never some other commit."""
    git(daemon.base / NAME, "tag", "v1.0.0", FIRST)
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    result = run_cli(offline(snap, "--revision", ">=1.0.0 <2"))
    one_line_error(result, "argocd/guestbook", ">=1.0.0 <2", "unable to resolve")
    assert "semver constraint" in result.stderr


def test_a_server_that_never_answers_times_out(
    cache: Path, tmp_path: Path, run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """git connects, and the server says nothing: gitdrift gives up after the time limit
    instead of hanging (and never prompts: no terminal, GIT_TERMINAL_PROMPT=0)."""
    monkeypatch.setenv(fetch.FETCH_TIMEOUT_ENV, "1")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"git://127.0.0.1:{silent.getsockname()[1]}/{NAME}"
        result = run_cli(offline(snapshot_for(tmp_path, url)))
    one_line_error(result, "argocd/guestbook", url, "git fetch timed out after 1s")
    assert "$KUBECTL_GITDRIFT_FETCH_TIMEOUT" in result.stderr
    assert [n for n in mirrors(cache) if not n.endswith(".lock")] == []


def test_a_killed_fetch_leaves_nothing_a_later_run_trusts(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """What a git killed mid-fetch leaves in a mirror (ref and config lock files, a temporary
    pack) does not stop the next run, and a half-built new mirror is never used."""
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    assert run_cli(offline(snap, "--revision", FIRST)).exit_code == ExitCode.DRIFT
    (mirror,) = [cache / "git" / n for n in mirrors(cache) if n.endswith(".git")]
    (mirror / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (mirror / "refs" / "heads" / "main.lock").write_text("")
    (mirror / "config.lock").write_text("")
    (mirror / "objects" / "pack" / "tmp_pack_XXXX").write_bytes(b"PACK")
    # new mirrors killed runs were building: one two hours old, one just started (maybe running)
    old, young = cache / "git" / ".tmp-old.git", cache / "git" / ".tmp-young.git"
    for scratch in (old, young):
        (scratch / "objects").mkdir(parents=True)
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    result = run_cli(offline(snap, "--revision", "main"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert not (mirror / "config.lock").exists()
    assert not list((mirror / "objects" / "pack").glob("tmp_*"))
    # a cold mirror of another repository prunes what is stale, never what is young
    other = snapshot_for(tmp_path, daemon.url("other.git"), "other.yaml")
    daemon.serve(daemon.base / NAME, "other.git")
    assert run_cli(offline(other)).exit_code == ExitCode.DRIFT
    assert not old.exists()
    assert young.exists()


# ---------------------------------------------------------------------------- credentials


def test_the_users_own_git_config_and_credential_helper_are_used(
    clone: Path,
    cache: Path,
    tmp_path: Path,
    run_cli: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Application names `https://git.example.com/…`; the user's ~/.gitconfig rewrites it
    (`url.<base>.insteadOf`) to a loopback smart-HTTP server that wants basic auth, and its
    credential helper answers: gitdrift fetches with them, and stores neither URL nor password."""
    with GitHttp(tmp_path / "http") as server:
        server.serve(clone, NAME)
        gitconfig = tmp_path / "gitconfig"
        helper = "!f() { echo username=alice; echo password=s3cret; }; f"
        gitconfig.write_text(
            f'[url "{server.url("")}"]\n\tinsteadOf = https://git.example.com/org/\n'
            f"[credential]\n\thelper = {json.dumps(helper)}\n"
        )
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
        snap = snapshot_for(tmp_path, f"https://git.example.com/org/{NAME}")
        result = run_cli(offline(snap, "-o", "json"))
        assert result.exit_code == ExitCode.DRIFT, result.stderr
        assert server.fetches() == 2
        (mirror,) = [cache / "git" / n for n in mirrors(cache) if n.endswith(".git")]
        stored = "".join(p.read_text(errors="replace") for p in mirror.rglob("*") if p.is_file()
                         and p.stat().st_size < 100_000)  # fmt: skip
        assert "s3cret" not in stored
        assert "127.0.0.1" not in git(mirror, "config", "--list")


def test_a_password_prompt_never_hangs(
    clone: Path,
    cache: Path,
    tmp_path: Path,
    run_cli: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that wants a password and no credential helper: git would ask on the terminal;
    gitdrift's git has no terminal and GIT_TERMINAL_PROMPT=0, so it is a one-line error."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    with GitHttp(tmp_path / "http") as server:
        url = server.serve(clone, NAME)
        result = run_cli(offline(snapshot_for(tmp_path, url)))
    one_line_error(result, "argocd/guestbook", url, "terminal prompts disabled")
    assert [n for n in mirrors(cache) if not n.endswith(".lock")] == []


# ---------------------------------------------------------------------------- concurrency


def test_two_concurrent_runs_on_a_cold_cache_both_succeed(
    daemon: GitDaemon, cache: Path, tmp_path: Path
) -> None:
    """Two processes (the real console entry point) race to create the same mirror."""
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    env = {**os.environ, "KUBECTL_GITDRIFT_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "kubectl_gitdrift", *offline(snap, "-o", "json")]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        for _ in range(2)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, results, strict=True):
        assert proc.returncode == ExitCode.DRIFT, err.decode()
        assert err == b""
    assert results[0][0] == results[1][0]
    assert len([n for n in mirrors(cache) if n.endswith(".git")]) == 1
    assert daemon.requests() <= 4  # each fetches at most once; usually the second waits, reuses


def test_all_apps_of_one_repository_fetch_it_once(
    daemon: GitDaemon, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """`--all` over four Applications of the served repository (rendered in parallel): one
    fetch of the synced commit for all of them; the second run fetches nothing."""
    doc = yaml.safe_load(snapshot_for(tmp_path, daemon.url(NAME)).read_text())
    app = next(o for o in doc["items"] if o["kind"] == "Application")
    for i in range(1, 4):
        twin = json.loads(json.dumps(app))
        twin["metadata"]["name"] = f"guestbook-{i}"
        doc["items"].append(twin)
    snap = tmp_path / "fleet.yaml"
    snap.write_text(yaml.safe_dump(doc))
    args = ["--all", "--snapshot", str(snap), "--no-entry-points", "-o", "json"]
    first = run_cli(args)
    assert first.exit_code == ExitCode.DRIFT, first.stderr
    report = json.loads(first.stdout)
    assert len(report["applications"]) == 4
    assert report["errors"] == []
    assert daemon.requests() == 2
    assert run_cli(args).stdout == first.stdout
    assert daemon.requests() == 2


def test_threads_of_one_run_share_one_fetch(
    daemon: GitDaemon, cache: Path, tmp_path: Path, clone: Path
) -> None:
    """Several apps of one run on the same repository and revision (--all renders in threads)
    resolve and fetch it once."""
    repos = fetch.Repos(cache / "git")
    app = _app(daemon.url(NAME), "main")
    results: list[str] = []

    def work() -> None:
        co = repos.checkout(app, app.sources[0], "main", True)
        results.append(co.sha)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [SYNCED] * 6
    assert daemon.requests() == 3  # ls-remote, the branch, its files


# ---------------------------------------------------------------------------- --repo-root forms


def test_parse_repo_root_forms() -> None:
    assert fetch.parse_repo_root("/src/gitops") == fetch.RepoRoot(Path("/src/gitops"))
    assert fetch.parse_repo_root("dir=with=equals") == fetch.RepoRoot(Path("dir=with=equals"))
    assert fetch.parse_repo_root("https://github.com/org/repo.git=/src/repo") == fetch.RepoRoot(
        Path("/src/repo"), "https://github.com/org/repo.git"
    )
    assert fetch.parse_repo_root("git@github.com:org/repo=../repo") == fetch.RepoRoot(
        Path("../repo"), "git@github.com:org/repo"
    )
    with pytest.raises(ValueError, match="no directory"):
        fetch.parse_repo_root("https://github.com/org/repo=")


def test_mirror_key_keeps_the_path_case_and_messages_hide_passwords() -> None:
    same = {
        fetch.mirror_key(u)
        for u in (
            "https://github.com/Org/Repo.git",
            "git@github.com:Org/Repo",
            "ssh://git@GitHub.com/Org/Repo/",
            "https://user:token@github.com/Org/Repo.git",
        )
    }
    (key,) = same
    assert key.startswith("repo-")
    assert fetch.mirror_key("https://github.com/org/repo") != key  # case-sensitive hosts
    assert fetch.redact("fatal: https://user:s3cret@host/r.git: 401") == (
        "fatal: https://user:***@host/r.git: 401"
    )


def test_repo_root_url_mapping_wins_over_fetching(
    daemon: GitDaemon, cache: Path, clone: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    url = daemon.url(NAME)
    snap = snapshot_for(tmp_path, url)
    # the same repository written another way (ssh form, no .git): one mapping serves it
    mapped = f"{daemon.url(NAME.removesuffix('.git')).upper()}/={clone}"
    result = run_cli(offline(snap, "--repo-root", mapped))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert daemon.requests() == 0
    assert not (cache / "git").exists()
    two = run_cli(offline(snap, "--repo-root", str(clone), "--repo-root", str(tmp_path)))
    assert two.exit_code == ExitCode.USAGE_ERROR
    assert "one clone for every source" in two.stderr
    local = run_cli(offline(snap, "--local"))
    assert local.exit_code == ExitCode.USAGE_ERROR
    assert "--local" in local.stderr
    assert "--repo-root" in local.stderr


def test_local_renders_the_working_tree_of_a_mapped_clone(
    daemon: GitDaemon, cache: Path, clone: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """`--local --repo-root URL=DIR`: the working tree of DIR, uncommitted edits included."""
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(clone), str(work)], check=True, env=git_env())
    kustomization = work / "overlays/prod/guestbook/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("count: 3", "count: 6"))
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    result = run_cli(
        offline(snap, "-o", "json", "--local", "--repo-root", f"{daemon.url(NAME)}={work}")
    )
    assert result.exit_code == ExitCode.OK, result.stdout  # git now says 6, as the cluster does
    assert json.loads(result.stdout)["applications"][0]["sync"]["revision"] == "working tree"
    assert daemon.requests() == 0


def test_a_bare_clone_works_as_repo_root(
    clone: Path, cache: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """git.py reads bare repositories (what a fetched mirror is), so `--repo-root` may be one."""
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(clone), str(bare)], check=True)
    snap = INCIDENT / "snapshot.yaml"
    from_bare = run_cli(offline(snap, "-o", "json", "--repo-root", str(bare)))
    from_clone = run_cli(offline(snap, "-o", "json", "--repo-root", str(clone)))
    assert from_bare.exit_code == ExitCode.DRIFT, from_bare.stderr
    assert text_without_run_context(from_bare.stdout) == text_without_run_context(from_clone.stdout)


def test_multi_source_app_fetches_each_repository_and_ref_source(
    tmp_path: Path, cache: Path, clone: Path, run_cli: Callable[..., Result]
) -> None:
    """spec.sources from two repositories, one a `ref:` source whose files a Helm-less
    directory source does not need: each git repository is fetched into its own mirror;
    `--repo-root URL=DIR` for one of them leaves the other fetched."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "--quiet", "--initial-branch", "main")
    (other / "extra").mkdir()
    (other / "extra" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: prod\n"
        "data:\n  k: v\n"
    )
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "extra")
    with GitDaemon(tmp_path / "served") as daemon:
        main_url, extra_url = daemon.serve(clone, NAME), daemon.serve(other, "extra.git")
        snap = _multi_source_snapshot(
            tmp_path, main_url, extra_url, git(other, "rev-parse", "HEAD")
        )
        result = run_cli(offline(snap, "-o", "json"))
        assert result.exit_code == ExitCode.DRIFT, result.stderr
        app = json.loads(result.stdout)["applications"][0]
        statuses = {(r["kind"], r["name"]): r["status"] for r in app["resources"]}
        assert statuses[("ConfigMap", "extra")] == "Missing"
        assert statuses[("Deployment", "guestbook")] == "OutOfSync"
        assert len([n for n in mirrors(cache) if n.endswith(".git")]) == 2
        assert daemon.requests("extra.git") == 2  # the commit Argo CD compared, its files
        # the other repository from a local clone: only the first is fetched (and is cached)
        before = daemon.requests()
        mapped = run_cli(offline(snap, "-o", "json", "--repo-root", f"{extra_url}={other}"))
        assert mapped.exit_code == ExitCode.DRIFT, mapped.stderr
        assert json.loads(text_without_run_context(mapped.stdout)) == json.loads(
            text_without_run_context(result.stdout)
        )
        assert daemon.requests() == before, daemon.log.read_text()
        # a plain --repo-root that is a clone of neither repository: said, not ignored
        plain = run_cli(offline(snap, "--repo-root", str(other)))
        one_line_error(plain, f"--repo-root {other}", "clone of none", extra_url)


def _multi_source_snapshot(tmp_path: Path, main_url: str, extra_url: str, extra: str) -> Path:
    doc = yaml.safe_load(snapshot_for(tmp_path, main_url).read_text())
    app = next(o for o in doc["items"] if o["kind"] == "Application")
    source = app["spec"].pop("source")
    app["spec"]["sources"] = [
        source,
        {"repoURL": extra_url, "path": "extra", "targetRevision": "main"},
        {"repoURL": extra_url, "targetRevision": "main", "ref": "values"},
    ]
    app["status"]["sync"].pop("revision", None)
    app["status"]["sync"]["revisions"] = [SYNCED, extra, extra]
    path = tmp_path / "multi.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_write_patch_from_a_fetched_source_applies_to_a_clone(
    daemon: GitDaemon, cache: Path, clone: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """Adopt patches are written relative to the repository's root whether the source was
    fetched or cloned: `git apply` takes them in any clone at the revision rendered."""
    snap = snapshot_for(tmp_path, daemon.url(NAME))
    patch = tmp_path / "adopt.patch"
    result = run_cli(offline(snap, "--write-patch", str(patch)))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    cloned = tmp_path / "cloned.patch"
    run_cli(offline(snap, "--write-patch", str(cloned), "--repo-root", str(clone)))
    assert patch.read_text() == cloned.read_text()
    assert "+    count: 6" in patch.read_text()
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(clone), str(work)], check=True, env=git_env())
    git(work, "checkout", "-q", SYNCED)
    git(work, "apply", "--check", str(patch))


# ---------------------------------------------------------------------------- live


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    """The CLI with short backoffs: a retried request waits milliseconds."""
    return run_cli.tuned(**FAST_RETRIES)


def _live_objects(url: str) -> list[Obj]:
    text = (INCIDENT / "snapshot.yaml").read_text().replace(GITHUB_URL, url)
    return list(yaml.safe_load(text)["items"])


def test_live_mode_without_repo_root(
    kube_apiserver: ServerFactory,  # noqa: F811
    daemon: GitDaemon,
    cache: Path,
    clone: Path,
    tmp_path: Path,
    run_cli: Callable[..., Result],
) -> None:
    """`kubectl gitdrift guestbook` against the loopback API server, repoURL on the loopback
    git daemon, no --repo-root: the same report as from a clone; the second run fetches
    nothing (the synced commit is in the mirror)."""
    server: KubeAPIServer = kube_apiserver(_live_objects(daemon.url(NAME)))
    args = [
        "guestbook",
        "--kubeconfig",
        str(server.kubeconfig_path),
        "--context",
        server.context,
        "--no-entry-points",
        "-o",
        "json",
    ]
    first = run_cli(args)
    assert first.exit_code == ExitCode.DRIFT, first.stderr
    assert first.stderr == ""
    assert daemon.requests() == 2
    second = run_cli(args)
    assert second.stdout == first.stdout
    assert daemon.requests() == 2  # no network for git at all
    from_clone = run_cli([*args, "--repo-root", str(clone)])
    assert text_without_run_context(from_clone.stdout) == text_without_run_context(first.stdout)
    offline_run = run_cli([*args, "--offline"])
    assert offline_run.stdout == first.stdout
    assert daemon.requests() == 2


def _app(url: str, revision: str) -> Any:
    from kubectl_gitdrift import application

    doc = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text().replace(GITHUB_URL, url))
    body = next(o for o in doc["items"] if o["kind"] == "Application")
    body["spec"]["source"]["targetRevision"] = revision
    return application.parse_application(body)
