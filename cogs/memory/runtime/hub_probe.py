"""Whether the model hub answers, asked once per process before a model loads from it: when it does not (no network,
a firewall, a dead proxy), the process goes offline (``HF_HUB_OFFLINE``) and loads from the local cache at once,
instead of retrying each file for half a minute ("Retrying in 1s... 8s") on every command and at every start."""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import urllib.request
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ("DEFAULT_ENDPOINT", "PROBE_TIMEOUT_S", "HubProbe", "hub_address", "probe_hub", "settle_hub_mode")

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
# One TCP connect: the hub (or the proxy before it) answers one in well under a second wherever it is reachable.
PROBE_TIMEOUT_S = 2.0
_TRUE = frozenset({"1", "true", "yes", "on"})
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
HOW_TO_FIX = ("models load from the local cache only (HF_HUB_OFFLINE=1 for this process). If a model is not cached "
              "yet: allow this machine to reach the hub once, set HTTPS_PROXY or HF_ENDPOINT (a mirror), or copy a "
              "filled cache into HF_HOME (docs/operations.md, pre-seeding the model cache)")


@dataclass(frozen=True, slots=True)
class HubProbe:
    """What the probe found: the address tried (the hub, or the proxy in front of it) and why it failed, if it did."""

    endpoint: str
    address: tuple[str, int]
    reachable: bool
    reason: str | None = None


def hub_address(environ: MutableMapping[str, str]) -> tuple[str, tuple[str, int]]:
    """The hub's URL (``HF_ENDPOINT``, else huggingface.co) and the host and port a download connects to first: the
    proxy ``HTTPS_PROXY``/``HTTP_PROXY`` name for it (``NO_PROXY`` honoured), else the hub itself."""
    endpoint = environ.get("HF_ENDPOINT", "").strip().rstrip("/") or DEFAULT_ENDPOINT
    parts = urlsplit(endpoint)
    host = parts.hostname or "huggingface.co"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    proxies = {name.lower().removesuffix("_proxy"): value for name, value in environ.items()
               if name.lower().endswith("_proxy") and value}
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    bypass = getattr(urllib.request, "proxy_bypass_environment")  # NO_PROXY's rule; missing from typeshed
    if proxy and not bypass(host, proxies):
        proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if proxy_parts.hostname:
            return endpoint, (proxy_parts.hostname, proxy_parts.port or 80)
    return endpoint, (host, port)


def probe_hub(environ: MutableMapping[str, str] | None = None, timeout: float = PROBE_TIMEOUT_S,
              connect: Callable[..., socket.socket] = socket.create_connection) -> HubProbe:
    """One TCP connect to the hub (or its proxy), at most ``timeout`` seconds (name lookup included)."""
    environ = os.environ if environ is None else environ
    endpoint, address = hub_address(environ)
    try:
        connect(address, timeout=timeout).close()
    except OSError as error:  # refused, unreachable, no such name, timed out
        return HubProbe(endpoint, address, False, f"{type(error).__name__}: {error}")
    return HubProbe(endpoint, address, True)


_settled: HubProbe | None = None
_settling = threading.Lock()


def settle_hub_mode(environ: MutableMapping[str, str] | None = None,
                    probe: Callable[[MutableMapping[str, str]], HubProbe] = probe_hub) -> HubProbe | None:
    """Probes the hub once per process (None when ``HF_HUB_OFFLINE`` already says offline); when it does not answer,
    sets the offline variables (and huggingface_hub's constant, if imported already) and says once how to fix it.
    Call it before anything loads a model (the embedding service, the reranker)."""
    global _settled
    environ = os.environ if environ is None else environ
    with _settling:
        if any(environ.get(name, "").strip().lower() in _TRUE for name in OFFLINE_VARIABLES):
            return None
        if _settled is not None:
            return _settled
        _settled = found = probe(environ)
        if not found.reachable:
            for name in OFFLINE_VARIABLES:
                environ[name] = "1"
            constants = sys.modules.get("huggingface_hub.constants")
            if constants is not None:
                setattr(constants, "HF_HUB_OFFLINE", True)  # read at import: tell it too
            host, port = found.address
            log.warning("The model hub %s cannot be reached (%s:%d: %s); %s", found.endpoint, host, port,
                        found.reason, HOW_TO_FIX)
        return found
