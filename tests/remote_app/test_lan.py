"""The LAN listener's certificate and address (remote_app.lan_cert, remote_app.lan): made once,
for the address it serves, its key private; an address found on its own is never a public one."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from cryptography import x509

from remote_app import lan, lan_cert


def san_addresses(cert: lan_cert.LanCertificate) -> list[str]:
    parsed = x509.load_pem_x509_certificate(cert.cert_pem)
    names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(a) for a in names.get_values_for_type(x509.IPAddress)]


def test_the_certificate_names_its_address_and_is_made_once(tmp_path: Path) -> None:
    first = lan_cert.certificate_for(tmp_path, "192.0.2.2")
    assert san_addresses(first) == ["192.0.2.2"]
    assert lan_cert.certificate_for(tmp_path, "192.0.2.2") == first  # kept, not made again
    folder = lan_cert.folder(tmp_path)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "key.pem").stat().st_mode & 0o777 == 0o600
    parsed = x509.load_pem_x509_certificate(first.cert_pem)
    days = (parsed.not_valid_after_utc - parsed.not_valid_before_utc).days
    assert days <= 825, days  # what Apple's platforms accept


def test_another_address_gets_a_new_certificate_with_the_same_key(tmp_path: Path) -> None:
    first = lan_cert.certificate_for(tmp_path, "192.0.2.2")
    (lan_cert.folder(tmp_path) / "key.pem").chmod(0o644)
    moved = lan_cert.certificate_for(tmp_path, "10.1.2.3")
    assert san_addresses(moved) == ["10.1.2.3"] and moved.fingerprint != first.fingerprint
    assert moved.key_pem == first.key_pem
    assert (lan_cert.folder(tmp_path) / "key.pem").stat().st_mode & 0o777 == 0o600


def test_a_certificate_near_its_end_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lan_cert, "VALID_DAYS", lan_cert.RENEW_DAYS - 1)
    first = lan_cert.certificate_for(tmp_path, "192.0.2.2")
    assert lan_cert.certificate_for(tmp_path, "192.0.2.2").fingerprint != first.fingerprint


def test_an_address_found_on_its_own_is_never_a_public_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lan, "_default_route_address", lambda: "8.8.8.8")
    address, why = lan.lan_address()
    assert address == "" and "public" in why and "remote.lan.address" in why
    assert lan.lan_address("8.8.8.8") == ("8.8.8.8", "")  # named by the owner: taken

    monkeypatch.setattr(lan, "_default_route_address", lambda: "")
    monkeypatch.setattr(lan, "_host_name_addresses", lambda: [])
    address, why = lan.lan_address()
    assert address == "" and "no network address" in why

    monkeypatch.setattr(lan, "_host_name_addresses", lambda: ["192.168.1.20"])
    assert lan.lan_address() == ("192.168.1.20", "")


def test_the_default_route_address_is_this_machines_own() -> None:
    found = lan._default_route_address()
    assert found and not ipaddress.ip_address(found).is_loopback, found
