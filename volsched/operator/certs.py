"""The webhook server's certificates: a self-signed CA the operator makes at start (kept in memory and
a private temporary directory, made anew at every start: the webhook configurations kopf manages carry
its bundle), or files another issuer wrote (cert-manager's Secret mounted: ``tls.crt``, ``tls.key``,
``ca.crt``)."""

from __future__ import annotations

import datetime
import ipaddress
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: How long a certificate the operator makes lasts (it makes new ones at every start).
VALID_FOR = datetime.timedelta(days=365)


@dataclass(frozen=True)
class WebhookCerts:
    certfile: Path
    pkeyfile: Path
    cafile: Path


def from_dir(path: Path) -> WebhookCerts:
    """Certificates another issuer wrote into ``path`` (a cert-manager Secret's keys)."""
    return WebhookCerts(certfile=path / "tls.crt", pkeyfile=path / "tls.key", cafile=path / "ca.crt")


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def self_signed(hosts: list[str]) -> WebhookCerts:
    """A new CA and a server certificate for ``hosts`` (DNS names or IP addresses) signed by it, written
    to a new private directory (mode 0700)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("volsched webhook CA"))
        .issuer_name(_name("volsched webhook CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    out = Path(tempfile.mkdtemp(prefix="volsched-webhook-"))
    certs = WebhookCerts(certfile=out / "tls.crt", pkeyfile=out / "tls.key", cafile=out / "ca.crt")
    certs.certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    certs.cafile.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    certs.pkeyfile.touch(mode=0o600)
    certs.pkeyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return certs
