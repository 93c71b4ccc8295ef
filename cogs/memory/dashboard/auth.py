"""Who may use the dashboard: one-time login tokens shared through a file, and the sessions they open.

The bot and ``python -m cogs.memory dashboard-link`` are different processes, so a login token is written by
whichever issues it to ``<data dir>/dashboard/login-tokens`` (mode 0600, in a 0700 folder), as its SHA-256 and an
expiry: the file never holds a usable token. The server consumes a token by removing its line, under an exclusive
``flock`` that the issuer takes too, so a token works once. Sessions live only in the server's memory: a restart
signs everyone out.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ("LoginTokens", "Session", "Sessions", "TOKEN_FILE_NAME", "csrf_matches")

TOKEN_FILE_NAME = "login-tokens"
TOKEN_BYTES = 32
# A file left with thousands of unused tokens (a script calling dashboard-link in a loop) is cut to the newest.
MAX_PENDING_TOKENS = 100


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class LoginTokens:
    """Issue and consume one-time login tokens through ``folder/login-tokens``. Blocking file I/O: run it off the
    event loop (``asyncio.to_thread``)."""

    def __init__(self, folder: Path, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.path = folder / TOKEN_FILE_NAME
        self.ttl_s = ttl_s
        self._clock = clock

    def _open(self) -> int:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        os.fchmod(descriptor, 0o600)  # an older file, or a umask, must not leave it readable by others
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        return descriptor

    def _rewrite(self, descriptor: int, lines: list[str]) -> None:
        os.lseek(descriptor, 0, os.SEEK_SET)
        os.ftruncate(descriptor, 0)
        os.write(descriptor, "".join(lines).encode())
        os.fsync(descriptor)

    def _live_lines(self, descriptor: int, now: float) -> list[str]:
        os.lseek(descriptor, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(descriptor, 65536):
            chunks.append(chunk)
        lines = []
        for line in b"".join(chunks).decode(errors="replace").splitlines():
            digest, _, expiry = line.partition(" ")
            try:
                if float(expiry) > now:
                    lines.append(f"{digest} {expiry}\n")
            except ValueError:
                continue  # a damaged line grants nothing
        return lines[-MAX_PENDING_TOKENS:]

    def issue(self) -> str:
        """A new token, valid once for ``ttl_s``; expired ones are dropped from the file meanwhile."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        now = self._clock()
        descriptor = self._open()
        try:
            lines = self._live_lines(descriptor, now)[-(MAX_PENDING_TOKENS - 1):]
            lines.append(f"{_digest(token)} {now + self.ttl_s:.3f}\n")
            self._rewrite(descriptor, lines)
        finally:
            os.close(descriptor)  # closing releases the lock
        return token

    def consume(self, token: str) -> bool:
        """True once for a live token issued here; False for an unknown, used or expired one."""
        if not token or len(token) > 200:
            return False
        digest, now = _digest(token), self._clock()
        descriptor = self._open()
        try:
            lines = self._live_lines(descriptor, now)
            kept = [line for line in lines if not hmac.compare_digest(line.split(" ", 1)[0], digest)]
            self._rewrite(descriptor, kept)
        finally:
            os.close(descriptor)
        return len(kept) < len(lines)


@dataclass(frozen=True, slots=True)
class Session:
    """``label`` names the session in the log (never the cookie's value); ``csrf`` goes in every form."""

    label: str
    csrf: str
    expires_at: float


class Sessions:
    """Signed-in browsers, by the hash of their cookie's value."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._sessions: dict[str, Session] = {}

    def open(self) -> tuple[str, Session]:
        """A new session and the cookie value that names it."""
        self._expire()
        cookie = secrets.token_urlsafe(TOKEN_BYTES)
        session = Session(label=secrets.token_hex(4), csrf=secrets.token_urlsafe(TOKEN_BYTES),
                          expires_at=self._clock() + self.ttl_s)
        self._sessions[_digest(cookie)] = session
        return cookie, session

    def get(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        session = self._sessions.get(_digest(cookie))
        if session is None or session.expires_at <= self._clock():
            return None
        return session

    def close(self, cookie: str | None) -> Session | None:
        return self._sessions.pop(_digest(cookie), None) if cookie else None

    def _expire(self) -> None:
        now = self._clock()
        for key in [key for key, session in self._sessions.items() if session.expires_at <= now]:
            del self._sessions[key]


def csrf_matches(session: Session, given: str | None) -> bool:
    return given is not None and given != "" and hmac.compare_digest(session.csrf.encode(), given.encode())
