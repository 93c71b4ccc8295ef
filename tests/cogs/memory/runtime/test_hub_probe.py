"""Offline by detection: one quick probe of the model hub (HF_ENDPOINT, through any proxy) per process; when it does
not answer, the process goes offline before a model loads and says once how to fix it, with no retries."""

from __future__ import annotations

import logging
import socket

import pytest

from cogs.memory.runtime import hub_probe
from cogs.memory.runtime.hub_probe import HubProbe, hub_address, probe_hub, settle_hub_mode

__all__ = ("closed_port",)


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_address_is_the_endpoint_or_the_proxy_in_front_of_it() -> None:
    assert hub_address({}) == ("https://huggingface.co", ("huggingface.co", 443))
    assert hub_address({"HF_ENDPOINT": "http://mirror.lan:8080/"}) == ("http://mirror.lan:8080", ("mirror.lan", 8080))
    proxied = {"HTTPS_PROXY": "http://proxy.lan:3128"}
    assert hub_address(proxied)[1] == ("proxy.lan", 3128)
    assert hub_address({**proxied, "NO_PROXY": "huggingface.co"})[1] == ("huggingface.co", 443)


def test_a_closed_endpoint_is_unreachable() -> None:
    found = probe_hub({"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"})
    assert not found.reachable and found.reason is not None and "Refused" in found.reason


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_probe, "_settled", None)


def test_an_unreachable_hub_is_probed_once_and_sets_offline_mode(fresh: None,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    environ = {"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}
    probes: list[str] = []

    def counted(env: dict[str, str]) -> HubProbe:
        probes.append(env["HF_ENDPOINT"])
        return probe_hub(env)

    with caplog.at_level(logging.WARNING, logger=hub_probe.__name__):
        for _ in range(3):  # the embedder, the reranker, a profile switch
            settle_hub_mode(environ, counted)
    assert len(probes) == 1
    assert environ["HF_HUB_OFFLINE"] == environ["TRANSFORMERS_OFFLINE"] == "1"
    [said] = [record.getMessage() for record in caplog.records]
    assert said.startswith(f"The model hub {environ['HF_ENDPOINT']} cannot be reached (127.0.0.1:")
    assert "models load from the local cache only (HF_HUB_OFFLINE=1 for this process)" in said


def test_offline_already_set_is_not_probed(fresh: None) -> None:
    def refused(env: dict[str, str]) -> HubProbe:
        raise AssertionError("probed")

    assert settle_hub_mode({"HF_HUB_OFFLINE": "1"}, refused) is None
