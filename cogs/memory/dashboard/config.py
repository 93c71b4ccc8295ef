"""The dashboard's settings, taken from the process's ``Settings`` (the environment and .env, validated there).
Off unless a port is set; on this machine alone unless ``MEMORY_DASHBOARD_PUBLIC`` says otherwise."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..runtime.config import is_loopback_host

if TYPE_CHECKING:
    from ..runtime.config import Settings

__all__ = ("DashboardConfig", "HOST_ENV", "METRICS_TOKEN_ENV", "PORT_ENV", "PUBLIC_ENV", "URL_ENV")

PORT_ENV = "MEMORY_DASHBOARD_PORT"
HOST_ENV = "MEMORY_DASHBOARD_HOST"
# 1: MEMORY_DASHBOARD_HOST may be an address other machines reach (refused otherwise).
PUBLIC_ENV = "MEMORY_DASHBOARD_PUBLIC"
# The address a browser uses when it is not http://HOST:PORT (behind a TLS reverse proxy): https:// here marks the
# session cookie Secure.
URL_ENV = "MEMORY_DASHBOARD_URL"
# A scraper sends "Authorization: Bearer <token>"; without one, /metrics answers loopback clients only.
METRICS_TOKEN_ENV = "MEMORY_DASHBOARD_METRICS_TOKEN"
LOGIN_TTL_S = 600.0
SESSION_TTL_S = 8 * 3600.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    port: int  # 0 picks a free port (tests)
    data_dir: Path  # the login tokens live in data_dir/dashboard/
    host: str = "127.0.0.1"
    public_url: str | None = None
    metrics_token: str | None = None
    public: bool = False  # host may be reached from other machines: PUBLIC_ENV says so
    login_ttl_s: float = LOGIN_TTL_S
    session_ttl_s: float = SESSION_TTL_S

    def __post_init__(self) -> None:
        if not self.public and not is_loopback_host(self.host):
            raise ValueError(f"the dashboard's host {self.host!r} lets other machines reach it: set {PUBLIC_ENV}=1 to "
                             "mean it, or use 127.0.0.1")

    @property
    def reachable_from_elsewhere(self) -> bool:
        return not is_loopback_host(self.host)

    @classmethod
    def from_settings(cls, data_dir: Path, settings: Settings) -> DashboardConfig | None:
        """The configured dashboard, or None when ``MEMORY_DASHBOARD_PORT`` is unset (the dashboard stays off)."""
        if settings.memory_dashboard_port is None:
            return None
        token = settings.memory_dashboard_metrics_token
        return cls(port=settings.memory_dashboard_port, data_dir=data_dir, host=settings.memory_dashboard_host,
                   public_url=settings.memory_dashboard_url, public=settings.memory_dashboard_public,
                   metrics_token=None if token is None else token.get_secret_value())

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

    def probe_address(self) -> tuple[str, int]:
        """Where a process on this machine reaches the bound port (a wildcard bind answers on loopback)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        return host, self.port

    def allowed_hosts(self) -> frozenset[str]:
        """Host header names a request may carry (a DNS-rebinding page sends its own name and is refused)."""
        names = {self.host, *LOOPBACK_HOSTS}
        if self.public_url is not None:
            names.add(urlsplit(self.public_url).hostname or "")
        return frozenset(name.lower() for name in names if name)

    def login_link(self, token: str, port: int | None = None) -> str:
        return f"{self.base_url(port)}/login?token={token}"
