"""The LAN listener's TLS certificate (docs/remote.md "A phone on the same network"): made once
on this machine, self-signed, for the LAN address it is served on. A phone cannot be given a
certificate it already trusts without internet or installing a CA, so it is pinned instead: its
SHA-256 fingerprint travels in the QR code's fragment and is shown on both screens, for the
person to compare with what the phone's browser shows.

Kept in `$SVC_HOME/lan-tls/`: `key.pem` (0600, folder 0700) is made once and kept, so the
fingerprint only changes when the certificate must (another address, or near its end)."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Apple's platforms refuse server certificates valid for more than 825 days; a new one is made
# when fewer than RENEW_DAYS are left (the phone then accepts it once more).
VALID_DAYS = 800
RENEW_DAYS = 30


@dataclass(frozen=True)
class LanCertificate:
    cert_pem: bytes
    key_pem: bytes
    fingerprint: str  # SHA-256 of the DER certificate, "AB:CD:…" as browsers show it


def folder(home: Path) -> Path:
    return home / "lan-tls"


def fingerprint_of(der: bytes) -> str:
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def certificate_for(home: Path, address: str) -> LanCertificate:
    """The certificate for `address`, made now only when there is none that names it and has
    more than RENEW_DAYS left. The key is made once and kept."""
    where = folder(home)
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(where, 0o700)
    key = _key(where / "key.pem")
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    cert_path = where / "cert.pem"
    cert = _usable(cert_path, address, key)
    if cert is None:
        cert = _issue(key, address)
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return LanCertificate(
        cert.public_bytes(serialization.Encoding.PEM),
        key_pem,
        fingerprint_of(cert.public_bytes(serialization.Encoding.DER)),
    )


def _key(path: Path) -> ec.EllipticCurvePrivateKey:
    if path.exists():
        os.chmod(path, 0o600)  # a key left readable by others is made private again
        loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if isinstance(loaded, ec.EllipticCurvePrivateKey):
            return loaded
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return key


def _usable(path: Path, address: str, key: ec.EllipticCurvePrivateKey) -> x509.Certificate | None:
    if not path.exists():
        return None
    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        addresses = {str(a) for a in names.get_values_for_type(x509.IPAddress)}
    except (ValueError, x509.ExtensionNotFound):
        return None
    left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    same_key = cert.public_key().public_numbers() == key.public_key().public_numbers()
    if address in addresses and same_key and left > datetime.timedelta(days=RENEW_DAYS):
        return cert
    return None


def _issue(key: ec.EllipticCurvePrivateKey, address: str) -> x509.Certificate:
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"svc on {socket.gethostname()}"[:64])]
    )
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
