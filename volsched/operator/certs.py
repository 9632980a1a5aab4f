"""The webhook server's certificates, in one of three ways:

* **shared** (:class:`SharedCerts`): a CA and a server certificate kept in one Secret that every replica
  reads. The first replica to start creates it (a create that another replica's create beat answers 409:
  that one's is read instead), the others read it; every replica serves the same certificate, so the
  caBundle in the webhook configurations fits whichever replica the apiserver reaches. What to renew and
  when is :func:`renewed` (pure): a server certificate with a third of its life left, or missing a host
  name, is issued again by the newest CA; a CA with a third of its life left gets a successor that is
  added to the bundle first and signs certificates only :data:`CA_GRACE` later, once the leader has put
  the new bundle in the webhook configurations. A replica that sees the Secret changed writes the new
  files and kopf's server reloads them. Any replica may renew: the write names the resourceVersion read,
  so of two at once one wins and the other reads the winner's.
* **self-signed** (:func:`self_signed`): a CA made at every start, kept in memory and a private
  directory; right for one replica (each replica would make its own).
* **from files** (:func:`from_dir`): another issuer wrote them (cert-manager's Secret mounted:
  ``tls.crt``, ``tls.key``, ``ca.crt``).

It decides nothing about admission; kopf's server reads the files, and the webhook configurations get
the CA bundle from ``ca.crt``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from volsched.kube.secret import Conflict, SecretStore
from volsched.records import dataclass

log = logging.getLogger("volsched.operator")

#: How long a certificate the operator makes lasts: the server certificate, and its CA.
VALID_FOR = datetime.timedelta(days=365)
CA_VALID_FOR = datetime.timedelta(days=3650)
#: A certificate (or CA) with less than this part of its life left is renewed.
RENEW_LEFT = 1 / 3
#: A new CA is in the shared bundle this long before the certificates it signs are served: time for
#: every replica to read the Secret, and for the leader to put the bundle in the webhook configurations.
CA_GRACE = datetime.timedelta(minutes=10)
#: Certificates start this long before they are made (clocks a little behind still take them).
SKEW = datetime.timedelta(minutes=5)
#: The Secret's keys (``tls.crt``/``tls.key`` as a kubernetes.io/tls Secret has them; ``ca.crt`` the
#: bundle, newest CA first; ``ca.key`` the newest CA's key).
KEYS = ("tls.crt", "tls.key", "ca.crt", "ca.key")


@dataclass(frozen=True)
class WebhookCerts:
    """The webhook server's certificate, its key and the CA that signed it, as files."""

    certfile: Path
    pkeyfile: Path
    cafile: Path


def from_dir(path: Path) -> WebhookCerts:
    """Certificates another issuer wrote into ``path`` (a cert-manager Secret's keys)."""
    return WebhookCerts(certfile=path / "tls.crt", pkeyfile=path / "tls.key", cafile=path / "ca.crt")


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def new_ca(now: datetime.datetime, valid_for: datetime.timedelta = CA_VALID_FOR) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:  # fmt: skip
    """A CA (named after the time it was made: CAs that follow one another differ by name too)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(f"volsched webhook CA {now:%Y-%m-%dT%H:%M:%SZ}")
    ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - SKEW)
        .not_valid_after(now + valid_for)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return ca, key


def issue(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    hosts: Sequence[str],
    *,
    now: datetime.datetime,
    valid_for: datetime.timedelta = VALID_FOR,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A server certificate for ``hosts`` (DNS names or IP addresses), signed by ``ca``."""
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
        .not_valid_before(now - SKEW)
        .not_valid_after(now + valid_for)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def hosts_of(cert: x509.Certificate) -> list[str]:
    """The DNS names and IP addresses a server certificate is for."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [
        *san.get_values_for_type(x509.DNSName),
        *(str(ip) for ip in san.get_values_for_type(x509.IPAddress)),
    ]


def signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _left(cert: x509.Certificate, now: datetime.datetime) -> float:
    """The part of ``cert``'s life still ahead (<= 0: expired)."""
    life = cert.not_valid_after_utc - cert.not_valid_before_utc
    return (cert.not_valid_after_utc - now) / life if life.total_seconds() > 0 else 0.0


@dataclass(frozen=True)
class Issued:
    """A shared Secret's contents, parsed: the CA bundle (newest first), the newest CA's key, and the
    server certificate with its key."""

    cas: tuple[x509.Certificate, ...]
    ca_key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def data(self) -> dict[str, bytes]:
        return {
            "tls.crt": _pem(self.cert),
            "tls.key": _key_pem(self.key),
            "ca.crt": b"".join(_pem(c) for c in self.cas),
            "ca.key": _key_pem(self.ca_key),
        }


def parse(data: Mapping[str, bytes]) -> Issued | None:
    """The Secret's contents, or None when a key is missing or does not decode (then it is made anew)."""
    try:
        cas = tuple(x509.load_pem_x509_certificates(data["ca.crt"]))
        ca_key = serialization.load_pem_private_key(data["ca.key"], password=None)
        cert = x509.load_pem_x509_certificate(data["tls.crt"])
        key = serialization.load_pem_private_key(data["tls.key"], password=None)
    except (KeyError, ValueError, TypeError):
        return None
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey) or not isinstance(key, ec.EllipticCurvePrivateKey):
        return None
    if not cas or cas[0].public_key() != ca_key.public_key() or cert.public_key() != key.public_key():
        return None
    return Issued(cas=cas, ca_key=ca_key, cert=cert, key=key)


def renewed(
    data: Mapping[str, bytes] | None, hosts: Sequence[str], *, now: datetime.datetime
) -> dict[str, bytes] | None:
    """What the shared Secret should hold from ``now`` on, or None when ``data`` is good as it is.

    * Nothing usable: a new CA and a certificate for ``hosts``.
    * The newest CA has less than :data:`RENEW_LEFT` of its life left: a new CA goes first in the bundle
      (the old ones stay until they expire), and the certificate is left as it is.
    * The certificate has less than :data:`RENEW_LEFT` of its life left, lacks one of ``hosts``, or was
      signed by an older CA: a new one, for the hosts it had and ``hosts``, signed by the newest CA; but
      not before the newest CA has been in the bundle for :data:`CA_GRACE` (unless the certificate
      expired: then nothing valid is served meanwhile anyway).
    """
    issued = parse(data) if data is not None else None
    if issued is None:
        ca, ca_key = new_ca(now)
        cert, key = issue(ca, ca_key, list(hosts), now=now)
        return Issued(cas=(ca,), ca_key=ca_key, cert=cert, key=key).data()
    cas = tuple(c for c in issued.cas if c.not_valid_after_utc > now)
    ca_key = issued.ca_key
    cert, key = issued.cert, issued.key
    expired = cert.not_valid_after_utc <= now
    if not cas or _left(cas[0], now) < RENEW_LEFT:
        ca, ca_key = new_ca(now)
        cas = (ca, *cas)
        if expired:  # nothing to keep serving meanwhile
            cert, key = issue(ca, ca_key, list(hosts), now=now)
        return Issued(cas=cas, ca_key=ca_key, cert=cert, key=key).data()
    newest = cas[0]
    had = hosts_of(cert)
    by_older = not signed_by(cert, newest)
    # A CA new in the bundle signs nothing yet (unless nothing valid is left to serve meanwhile).
    waiting = by_older and now - (newest.not_valid_before_utc + SKEW) < CA_GRACE and not expired
    due = not waiting and (_left(cert, now) < RENEW_LEFT or any(h not in had for h in hosts) or by_older)
    if due:
        names = list(hosts) + [h for h in had if h not in hosts] if not expired else list(hosts)
        cert, key = issue(newest, ca_key, names, now=now)
    elif cas == issued.cas:
        return None
    return Issued(cas=cas, ca_key=ca_key, cert=cert, key=key).data()


def write_files(certs: WebhookCerts, data: Mapping[str, bytes]) -> None:
    """Write the certificate, its key and the CA bundle (each replaced whole: a reader sees the old file
    or the new one). Called on the event loop kopf's server runs on, with no await in between, so it
    never reads a certificate of one pair and the key of another."""
    for path, key in ((certs.pkeyfile, "tls.key"), (certs.certfile, "tls.crt"), (certs.cafile, "ca.crt")):
        part = path.with_name(f"{path.name}.new")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data[key])
        os.replace(part, path)


def self_signed(hosts: list[str]) -> WebhookCerts:
    """A new CA and a server certificate for ``hosts`` (DNS names or IP addresses) signed by it, written
    to a new private directory (mode 0700)."""
    now = datetime.datetime.now(datetime.UTC)
    ca, ca_key = new_ca(now, VALID_FOR)
    cert, key = issue(ca, ca_key, hosts, now=now)
    certs = _private_files()
    write_files(certs, Issued(cas=(ca,), ca_key=ca_key, cert=cert, key=key).data())
    return certs


def _private_files() -> WebhookCerts:
    out = Path(tempfile.mkdtemp(prefix="volsched-webhook-"))
    return WebhookCerts(certfile=out / "tls.crt", pkeyfile=out / "tls.key", cafile=out / "ca.crt")


# --- the shared Secret -------------------------------------------------------------------------------------


class SharedCerts:
    """The webhook certificates every replica shares through ``store`` (see the module), in files of a
    private directory (mode 0700) that kopf's server reads. :meth:`sync` (blocking) reads the Secret,
    creates or renews it when due, and returns the data when it differs from what the files hold;
    :meth:`write` writes them (on kopf's event loop)."""

    def __init__(
        self,
        store: SecretStore,
        hosts: Iterable[str],
        *,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.store = store
        self.hosts = list(dict.fromkeys(hosts))
        self.clock = clock
        self.files = _private_files()
        self._written: dict[str, bytes] | None = None

    def sync(self, *, attempts: int = 5) -> dict[str, bytes] | None:
        """The Secret's data once read (created or renewed when due), when the files do not hold it yet;
        None when they do. Raises the client's errors when the apiserver cannot be asked, RuntimeError
        when other replicas kept writing it ``attempts`` times."""
        what = f"Secret {self.store.namespace}/{self.store.name}"
        for _ in range(attempts):
            got = self.store.read()
            now = self.clock()
            if got is None:
                data = renewed(None, self.hosts, now=now)
                assert data is not None
                try:
                    self.store.create(data)
                except Conflict:
                    continue  # another replica made it first: read theirs
                log.info("webhook certificates: created %s (a new CA, for %s)", what, ", ".join(self.hosts))
                return self._changed(data)
            data, version = got
            fresh = renewed(data, self.hosts, now=now)
            if fresh is None:
                return self._changed(data)
            try:
                self.store.replace(fresh, version)
            except Conflict:
                continue  # another replica renewed it meanwhile: read theirs
            log.info("webhook certificates: renewed in %s", what)
            return self._changed(fresh)
        raise RuntimeError(f"{what} kept changing under us ({attempts} tries)")

    def _changed(self, data: dict[str, bytes]) -> dict[str, bytes] | None:
        wanted = {k: data[k] for k in KEYS if k in data}
        return None if wanted == self._written else wanted

    def write(self, data: Mapping[str, bytes]) -> None:
        write_files(self.files, data)
        self._written = {k: data[k] for k in KEYS if k in data}

    async def keep(self, stop: asyncio.Event, *, every: float) -> None:
        """Until ``stop``: every ``every`` seconds, the Secret read again (renewed when due) and what
        changed written to the files, which kopf's server reloads (on the leader, its bundle handed over
        to the webhook configurations). A failed read is tried again next time."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=every)
            if stop.is_set():
                return
            try:
                data = await asyncio.to_thread(self.sync)
            except Exception as exc:
                log.warning("webhook certificates: cannot read the Secret (%s); trying again", exc)
                continue
            if data is not None:
                self.write(data)
                log.info("webhook certificates: the Secret changed; serving its certificate")
