"""The dashboard's settings, read from the environment (bot.py loads .env into it first). Off unless a port is set."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ("DashboardConfig", "DashboardConfigError", "HOST_ENV", "METRICS_TOKEN_ENV", "PORT_ENV", "URL_ENV")

PORT_ENV = "MEMORY_DASHBOARD_PORT"
HOST_ENV = "MEMORY_DASHBOARD_HOST"
# The address a browser uses when it is not http://HOST:PORT (behind a TLS reverse proxy): https:// here marks the
# session cookie Secure.
URL_ENV = "MEMORY_DASHBOARD_URL"
# A scraper sends "Authorization: Bearer <token>"; without one, /metrics answers loopback clients only.
METRICS_TOKEN_ENV = "MEMORY_DASHBOARD_METRICS_TOKEN"
LOGIN_TTL_S = 600.0
SESSION_TTL_S = 8 * 3600.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class DashboardConfigError(ValueError):
    """A dashboard setting is wrong; the message names the variable and what it takes."""


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    port: int  # 0 picks a free port (tests)
    data_dir: Path  # the login tokens live in data_dir/dashboard/
    host: str = "127.0.0.1"
    public_url: str | None = None
    metrics_token: str | None = None
    login_ttl_s: float = LOGIN_TTL_S
    session_ttl_s: float = SESSION_TTL_S

    @classmethod
    def from_env(cls, data_dir: Path, environ: Mapping[str, str] | None = None) -> DashboardConfig | None:
        """The configured dashboard, or None when ``MEMORY_DASHBOARD_PORT`` is unset (the dashboard stays off)."""
        env = os.environ if environ is None else environ
        raw_port = env.get(PORT_ENV, "").strip()
        if not raw_port:
            return None
        if not raw_port.isdigit() or not 1 <= int(raw_port) <= 65535:
            raise DashboardConfigError(f"{PORT_ENV} must be a port number from 1 to 65535, not {raw_port!r}")
        public_url = env.get(URL_ENV, "").strip().rstrip("/") or None
        if public_url is not None and urlsplit(public_url).scheme not in ("http", "https"):
            raise DashboardConfigError(f"{URL_ENV} must start with https:// (or http://), not {public_url!r}")
        return cls(port=int(raw_port), data_dir=data_dir, host=env.get(HOST_ENV, "").strip() or "127.0.0.1",
                   public_url=public_url, metrics_token=env.get(METRICS_TOKEN_ENV, "").strip() or None)

    @property
    def token_dir(self) -> Path:
        return self.data_dir / "dashboard"

    @property
    def secure_cookies(self) -> bool:
        return self.public_url is not None and self.public_url.startswith("https://")

    def base_url(self, port: int | None = None) -> str:
        """Where a browser reaches the dashboard: the public URL, else http://HOST:PORT."""
        if self.public_url is not None:
            return self.public_url
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port if port is not None else self.port}"

    def allowed_hosts(self) -> frozenset[str]:
        """Host header names a request may carry (a DNS-rebinding page sends its own name and is refused)."""
        names = {self.host, *LOOPBACK_HOSTS}
        if self.public_url is not None:
            names.add(urlsplit(self.public_url).hostname or "")
        return frozenset(name.lower() for name in names if name)

    def login_link(self, token: str, port: int | None = None) -> str:
        return f"{self.base_url(port)}/login?token={token}"
