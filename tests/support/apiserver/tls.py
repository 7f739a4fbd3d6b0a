"""Per-session certificate authority and server certificate for the loopback API server.

Keys are ECDSA P-256 (generated in about a millisecond, accepted by Python's ``ssl`` and by
Go's ``crypto/tls`` in kubectl). The CA and the server certificate are created once per
process and shared by every server started in it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TLSMaterial:
    """PEM-encoded CA certificate plus the server's certificate and key, with files on disk."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    directory: Path

    @property
    def ca_path(self) -> Path:
        """The CA certificate as a file (for ``httpx``/``curl``/``--certificate-authority``)."""
        return self.directory / "ca.crt"

    def server_context(self) -> ssl.SSLContext:
        """A server-side TLS context presenting the server certificate."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.directory / "server.crt", self.directory / "server.key")
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client-side TLS context trusting only the session CA (hostname checked)."""
        return ssl.create_default_context(cafile=str(self.ca_path))


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kubectl-gitdrift tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


@lru_cache(maxsize=1)
def session_tls() -> TLSMaterial:
    """Create (once per process) a CA and a server certificate for ``127.0.0.1``/``localhost``."""
    now = dt.datetime.now(dt.timezone.utc)
    not_before = now - dt.timedelta(minutes=5)
    not_after = now + dt.timedelta(days=2)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("gitdrift-test-ca")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )

    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Lives for the whole process (the CA is per session); the OS tmp cleaner removes it.
    directory = Path(tempfile.mkdtemp(prefix="gitdrift-apiserver-tls-"))
    (directory / "ca.crt").write_bytes(ca_pem)
    (directory / "server.crt").write_bytes(cert_pem)
    (directory / "server.key").write_bytes(key_pem)
    (directory / "server.key").chmod(0o600)
    return TLSMaterial(ca_pem=ca_pem, cert_pem=cert_pem, key_pem=key_pem, directory=directory)
