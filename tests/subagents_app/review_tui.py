"""A terminal program that behaves like an agent's TUI for review comments: it turns on bracketed
paste and reports what it reads (tests/subagents_app/conftest.py declares it as the agent `tui`)."""

TUI = r"""
import os, sys, tty
tty.setraw(0)
os.write(1, b"\x1b[?2004hREADY\r\n")
got = b""
while not (got.endswith(b"\r") and b"\x1b[201~" in got):
    chunk = os.read(0, 65536)
    if not chunk:
        break
    got += chunk
os.write(1, b"GOT:" + got.hex().encode() + b"\r\n")
os.read(0, 1)
"""
