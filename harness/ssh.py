"""An SSH server for tunnel tests (harness/fakes/ssh_server.py) with throw-away keys, and the
settings entry that points an `ssh` tunnel at it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from harness.daemon import ROOT, free_port


@dataclass
class SSHServer:
    folder: Path
    port: int = field(default_factory=free_port)
    banner: str = ""
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        user_key = asyncssh.generate_private_key("ssh-ed25519")
        host_key.write_private_key(self.host_key_path)
        user_key.write_private_key(self.user_key_path)
        os.chmod(self.user_key_path, 0o600)
        user_key.write_public_key(self.folder / "authorized_keys")
        self.host_public = host_key.export_public_key().decode().strip()

    @property
    def host_key_path(self) -> Path:
        return self.folder / "host_key"

    @property
    def user_key_path(self) -> Path:
        return self.folder / "user_key"

    def known_hosts(self, name: str = "known_hosts", key: str | None = None) -> Path:
        """A known_hosts file holding this server's host key (or `key`, to test a wrong one)."""
        path = self.folder / name
        path.write_text(f"[127.0.0.1]:{self.port} {key or self.host_public}\n")
        return path

    def start(self) -> SSHServer:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness.fakes.ssh_server",
                "--port",
                str(self.port),
                "--host-key",
                str(self.host_key_path),
                "--authorized-keys",
                str(self.folder / "authorized_keys"),
                "--banner",
                self.banner,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the test SSH server did not start: {line!r}")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def tunnel(self, remote_port: int, **extra: object) -> dict:
        """settings.json's entry for an `ssh` tunnel to this server."""
        return {
            "provider": "ssh",
            "host": "127.0.0.1",
            "port": self.port,
            "user": "svc-test",
            "key_file": str(self.user_key_path),
            "known_hosts": str(self.known_hosts()),
            "remote_host": "127.0.0.1",
            "remote_port": remote_port,
            "public_url": "http://127.0.0.1:{remote_port}",
            "keepalive_s": 1,
            **extra,
        }
