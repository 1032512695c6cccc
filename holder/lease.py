"""The lease: while svc is attached to a terminal, svc reads its PTY itself.

Through frames, every byte of a flood is read from the PTY by the holder, written to the journal,
sent over the socket and read again by svc: the holder wakes for every few KiB (a PTY hands out
at most ~4 KiB a read), and on two busy cores those wake-ups cost a tenth of the throughput svc
reaches reading the PTY itself. With a lease svc reads the PTY, and the holder does nothing per
byte.

Nothing svc has read may be lost if svc is SIGKILLed, so no byte of the PTY's output is ever
only in svc's memory: svc moves each read from the PTY into a pipe (`splice`, inside the
kernel), from the pipe into the journal at the journal's end (`splice` again), and only then
reads it back from the journal (page cache) to show it. The holder holds the pipe's read end
too: when svc's connection ends, whatever svc moved into the pipe but not yet into the journal
is drained into it. Every byte is in the journal once, in PTY order, whatever instant svc died
at, and the next svc reads it from there.

The lease ends when svc's connection does; or when svc gives it back (LEASE_BACK) and its output
goes on in frames: when the holder asks (LEASE_END: the process ended, and the holder reads what
is left and sends the exit) or when the PTY cannot be spliced; or when svc attaches again, for a
new lease, once the journal has reached `until` (the holder then cuts it back to the
scrollback, which replaces the file).

A holder that does not know leases answers an attach without one, and svc reads frames.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

READ_SIZE = 64 << 10
READS_PER_WAKE = 16  # at most 16 chunks of ~4 KiB: one pipe's default capacity
FULL_READ = 4000  # a read this large emptied a full PTY buffer: more is most likely waiting


class Lease:
    """The holder's half: the pipe svc splices the PTY's output through, and svc's own handle on
    the journal (without O_APPEND, which splice refuses: svc writes at the journal's end)."""

    def __init__(self, journal_path: Path) -> None:
        self.pipe_r, pipe_w = os.pipe()
        # Shared with svc's copies: its splices must never block its event loop.
        os.set_blocking(self.pipe_r, False)
        os.set_blocking(pipe_w, False)
        self.handed = [pipe_w, self.pipe_r, os.open(journal_path, os.O_RDWR)]

    def handed_over(self) -> None:
        """svc has its copies: the holder keeps only the pipe's read end."""
        for fd in (self.handed[0], self.handed[2]):
            os.close(fd)

    def drain(self) -> bytes:
        """What svc moved out of the PTY but not yet into the journal; the pipe is closed."""
        left = bytearray()
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.pipe_r, READ_SIZE):
                left += chunk
        os.close(self.pipe_r)
        return bytes(left)


class LeasedPty:
    """svc's half: reads the PTY `pty`, journaling every read before it is seen (see above)."""

    def __init__(self, pty: int, fds: list[int], terms: dict[str, Any]) -> None:
        self.pty = pty
        self.pipe_w, self.pipe_r, self.journal = fds
        self.start: int = terms["end"]  # the output offset svc's own reading starts at
        self.at: int = terms["at"]  # where that offset is in the journal file
        self.until: int = terms["until"]
        self.eof = False  # every slave of the PTY is closed: nothing more to read
        self.ending = False  # the holder asked for the PTY back (LEASE_END)

    def reads(self, position: int) -> bool:
        """Whether svc reads the PTY at `position`: it has had, in frames, all that is before
        `start`, and the holder has not asked for the PTY back."""
        return position >= self.start and not self.ending

    @property
    def due(self) -> bool:
        """The journal is long enough to be cut back: the holder must have it again."""
        return self.at > self.until

    def read(self) -> bytes:
        """What the PTY holds now (b"" when nothing), once it is in the journal. A flood is read
        in up to READS_PER_WAKE chunks, so it costs one wake-up and one frame per ~64 KiB; a
        keystroke's echo costs one read. OSError: the PTY cannot be spliced here."""
        moved = 0
        for _ in range(READS_PER_WAKE):
            try:
                size = os.splice(self.pty, self.pipe_w, READ_SIZE)
            except BlockingIOError:  # nothing more now, or the pipe is full
                break
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: every slave is closed; anything else fails
                    raise
                size = 0
            if not size:
                self.eof = True
                break
            moved += size
            if size < FULL_READ:
                break
        if not moved:
            return b""
        done = 0
        while done < moved:
            step = os.splice(self.pipe_r, self.journal, moved - done, offset_dst=self.at + done)
            if not step:  # the holder drained the pipe: it no longer counts svc as attached
                raise BrokenPipeError("the lease's pipe was emptied by the holder")
            done += step
        data = os.pread(self.journal, moved, self.at)
        self.at += moved
        return data

    def close(self) -> None:
        for fd in (self.pipe_w, self.pipe_r, self.journal):
            with contextlib.suppress(OSError):
                os.close(fd)
