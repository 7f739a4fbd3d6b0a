"""Real chart servers on loopback, started by the tests: a Helm repository (Python's http.server
serving `helm package` + `helm repo index` output) and an OCI registry (Debian's
`docker-registry`, the CNCF distribution registry) over plain HTTP or HTTPS with a throwaway CA,
optionally behind htpasswd basic auth. Charts are packaged and pushed with the real helm."""

from __future__ import annotations

import base64
import datetime
import functools
import http.server
import ipaddress
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubectl_gitdrift.sources import helm

REGISTRY_BINARY = "docker-registry"
RUNNING: list[Registry] = []
"""The registries started and not stopped yet (their logs are shown when a test fails)."""
_LISTENING = re.compile(r"listening on (\S+):(\d+)")


def helm_bin() -> str:
    found = helm.helm_binary()
    assert found is not None, "the tests need helm (tools/install_helm.sh)"
    return found


def helm_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for test-side helm commands (package, push, login): its own config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_")}
    env.update(
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_DATA_HOME=str(home / "data"),
        HELM_REGISTRY_CONFIG=str(home / "registry.json"),
    )
    env.update(extra or {})
    return env


def run_helm(args: list[str], env: Mapping[str, str], stdin: str | None = None) -> str:
    proc = subprocess.run(
        [helm_bin(), *args],
        env=dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, f"helm {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def package_charts(src: Path, dest: Path, env: Mapping[str, str]) -> list[Path]:
    """`helm package` every chart directory below `src` (sorted) into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    charts = sorted(p.parent for p in src.rglob("Chart.yaml") if "charts" not in p.parts[-3:-1])
    for chart in charts:
        run_helm(["package", str(chart), "--destination", str(dest)], env)
    return sorted(dest.glob("*.tgz"))


# ------------------------------------------------------------------------- Helm repository


class _Quiet(http.server.SimpleHTTPRequestHandler):
    auth: str | None = None  # "user:password" for basic auth

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.auth is not None:
            expected = "Basic " + base64.b64encode(self.auth.encode()).decode()
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                self.end_headers()
                return
        super().do_GET()


@dataclass
class HelmRepo:
    """An HTTP Helm repository serving `directory` on 127.0.0.1."""

    directory: Path
    auth: str | None = None
    url: str = ""
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> HelmRepo:
        handler = type("Handler", (_Quiet,), {"auth": self.auth})
        self._server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(self.directory))
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def index(self, env: Mapping[str, str]) -> None:
        run_helm(["repo", "index", str(self.directory), "--url", self.url], env)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def serve_helm_repo(charts_src: Path, work: Path, auth: str | None = None) -> HelmRepo:
    """Package the charts below `charts_src` and serve them with an index, on loopback."""
    env = helm_env(work / "helm-home")
    served = work / "served"
    package_charts(charts_src, served, env)
    repo = HelmRepo(served, auth=auth).start()
    repo.index(env)
    return repo


# ------------------------------------------------------------------------- OCI registry


@dataclass
class CA:
    """A throwaway CA and a server certificate for 127.0.0.1/localhost."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def make_ca(directory: Path) -> CA:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gitdrift test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    out = CA(directory / "ca.pem", directory / "server.pem", directory / "server-key.pem")
    out.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    out.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out.key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return out


@dataclass
class Registry:
    """Debian's docker-registry on 127.0.0.1 (a random port), with the config this writes."""

    work: Path
    ca: CA | None = None  # HTTPS with this CA's server certificate; plain HTTP without
    users: dict[str, str] = field(default_factory=dict)  # htpasswd basic auth
    host: str = ""
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def plain_http(self) -> bool:
        return self.ca is None

    def start(self) -> Registry:
        binary = shutil.which(REGISTRY_BINARY)
        assert binary, "the tests need Debian's docker-registry (apt-get install docker-registry)"
        self.work.mkdir(parents=True, exist_ok=True)
        lines = [
            "version: 0.1",
            "log: {level: info, formatter: text}",
            "storage:",
            f"  filesystem: {{rootdirectory: {self.work / 'data'}}}",
            "http:",
            "  addr: 127.0.0.1:0",
            "  secret: gitdrift-tests",
        ]
        if self.ca is not None:
            lines.append(f"  tls: {{certificate: {self.ca.cert_file}, key: {self.ca.key_file}}}")
        if self.users:
            htpasswd = self.work / "htpasswd"
            entries = []
            for user, password in sorted(self.users.items()):
                proc = subprocess.run(
                    ["htpasswd", "-nbB", user, password],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                entries.append(proc.stdout.strip())
            htpasswd.write_text("\n".join(entries) + "\n")
            lines += ["auth:", f"  htpasswd: {{realm: gitdrift-tests, path: {htpasswd}}}"]
        config = self.work / "config.yml"
        config.write_text("\n".join(lines) + "\n")
        log = (self.work / "registry.log").open("wb")
        self._proc = subprocess.Popen(
            [binary, "serve", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = (self.work / "registry.log").read_text(errors="replace")
            match = _LISTENING.search(text)
            if match:
                self.host = f"127.0.0.1:{match.group(2)}"
                RUNNING.append(self)
                return self
            if self._proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"docker-registry did not start: {text[-2000:]}")

    def env(self, home: Path) -> dict[str, str]:
        """helm's environment for pushing here (trusting the test CA, logged in)."""
        extra = {"SSL_CERT_FILE": str(self.ca.ca_file)} if self.ca is not None else {}
        return helm_env(home, extra)

    def login(self, env: Mapping[str, str], user: str, password: str) -> None:
        args = ["registry", "login", self.host, "--username", user, "--password-stdin"]
        if self.plain_http:
            args.append("--plain-http")
        run_helm(args, env, stdin=password)

    def push(self, archives: list[Path], env: Mapping[str, str], path: str = "charts") -> None:
        for archive in archives:
            args = ["push", str(archive), f"oci://{self.host}/{path}"]
            if self.plain_http:
                args.append("--plain-http")
            run_helm(args, env)

    def log_tail(self, lines: int = 30) -> str:
        """The end of the registry's log (requests and errors), and whether it still runs."""
        try:
            text = (self.work / "registry.log").read_text(errors="replace")
        except OSError as exc:
            text = f"(no log: {exc})"
        alive = self._proc is not None and self._proc.poll() is None
        state = "running" if alive else f"exited {self._proc.returncode if self._proc else '?'}"
        kept = [ln for ln in text.splitlines() if 'msg="response completed"' not in ln]
        return f"{self.host} ({state}):\n" + "\n".join(kept[-lines:])  # the access log says it

    def stop(self) -> None:
        if self in RUNNING:
            RUNNING.remove(self)
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def serve_oci(
    charts_src: Path,
    work: Path,
    *,
    tls: bool = False,
    users: Mapping[str, str] | None = None,
    path: str = "charts",
) -> Registry:
    """A registry holding the charts below `charts_src`, pushed with `helm push`."""
    ca = make_ca(work / "ca") if tls else None
    registry = Registry(work / "registry", ca=ca, users=dict(users or {})).start()
    env = registry.env(work / "push-home")
    if users:
        user, password = min(users.items())
        registry.login(env, user, password)
    registry.push(package_charts(charts_src, work / "packages", env), env, path)
    return registry


def cache_files(cache: Path) -> Iterator[Path]:
    """Every file under the chart cache (to check nothing half-written stays there)."""
    root = cache / "charts"
    return iter(sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [])
