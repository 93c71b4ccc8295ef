"""A minimal client for any OpenAI-compatible chat endpoint (Ollama, vLLM, llama.cpp's server, OpenAI), and the
check of its settings at start. Discord-free, beside prompt.py (what it is asked): the bot and ``python -m cogs.memory
ask`` both send their answers' prompts through it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp

from .runtime.safe_text import redacted_text

if TYPE_CHECKING:
    from .runtime.config import Settings

__all__ = ("LLMCheck", "LLMConfig", "LLMError", "ChatClient", "check_llm", "log_llm_check")

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 60.0
MAX_ANSWER_TOKENS = 400
# The start-up probe of GET {base}/models: short, so a dead endpoint costs the start nothing noticeable.
PROBE_TIMEOUT_S = 5.0
# How many listed model names the probe's line shows.
MODELS_SHOWN = 5


class LLMError(Exception):
    """The endpoint could not be reached or gave an answer we cannot use; the words hold no password or key that
    LLM_BASE_URL may carry."""

    def __init__(self, message: str) -> None:
        super().__init__(redacted_text(message))


@dataclass(frozen=True, slots=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMConfig | None:
        """``LLM_BASE_URL`` and ``LLM_MODEL`` together turn the LLM answer on; ``LLM_API_KEY`` is optional (Ollama
        needs none). One without the other leaves answers off and logs which one is missing."""
        base_url, model = settings.llm_base_url, settings.llm_model
        if base_url is None and model is None:
            return None
        if base_url is None or model is None:
            given, missing = ("LLM_BASE_URL", "LLM_MODEL") if model is None else ("LLM_MODEL", "LLM_BASE_URL")
            log.warning("LLM answers are off: %s is set but %s is not; set both (or neither)", given, missing)
            return None
        key = settings.llm_api_key
        return cls(base_url=base_url.rstrip("/"), model=model,
                   api_key=None if key is None else key.get_secret_value())


@dataclass(frozen=True, slots=True)
class LLMCheck:
    """What the start-up probe found: ``ok`` is False when answers will likely fail; ``line`` says what to do."""

    ok: bool
    line: str


async def check_llm(config: LLMConfig, timeout_s: float = PROBE_TIMEOUT_S) -> LLMCheck:
    """Probes ``GET {base}/models`` once: reachable (and whether it lists the model), an HTTP error, or unreachable.
    A base URL without ``/v1`` is accepted when it answers, and told to add ``/v1`` when it does not. The line names
    LLM_BASE_URL without the password or key it may carry."""
    found = await _probe(config, timeout_s)
    return LLMCheck(found.ok, redacted_text(found.line))


async def _probe(config: LLMConfig, timeout_s: float) -> LLMCheck:
    url = f"{config.base_url}/models"
    headers = {} if config.api_key is None else {"Authorization": f"Bearer {config.api_key}"}
    without_v1 = not config.base_url.endswith("/v1")
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
            async with session.get(url, headers=headers) as response:
                status = response.status
                data = await response.json(content_type=None) if status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if without_v1:
            return LLMCheck(False, f"LLM_BASE_URL {config.base_url} has no /v1 and {url} failed ({reason}): add /v1 "
                                   "(e.g. http://localhost:11434/v1) and check the server runs")
        return LLMCheck(False, f"LLM at {config.base_url} is unreachable ({reason}); answers fail until it is up")
    if status != 200:
        if without_v1:
            return LLMCheck(False, f"LLM_BASE_URL {config.base_url} has no /v1 and {url} answered HTTP {status}: "
                                   f"add /v1 (e.g. {config.base_url}/v1)")
        return LLMCheck(False, f"LLM at {config.base_url}: {url} answered HTTP {status}; check LLM_BASE_URL "
                               "(an OpenAI-compatible API, ending in /v1)")
    models = _model_ids(data)
    accepted = " (no /v1, but it answers: accepted)" if without_v1 else ""
    if not models:
        return LLMCheck(True, f"LLM at {config.base_url} is reachable{accepted}; it lists no models")
    shown = ", ".join(models[:MODELS_SHOWN]) + (", ..." if len(models) > MODELS_SHOWN else "")
    if config.model not in models:
        return LLMCheck(False, f"LLM at {config.base_url} is reachable{accepted}, but LLM_MODEL {config.model} is not "
                               f"among the {len(models)} models it lists ({shown})")
    return LLMCheck(True, f"LLM at {config.base_url} is reachable{accepted}: {len(models)} models listed ({shown}), "
                          f"{config.model} among them")


def _model_ids(data: object) -> list[str]:
    """The ids of an OpenAI-style ``{"data": [{"id": ...}]}`` answer; anything else lists none."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [entry["id"] for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str)]


async def log_llm_check(config: LLMConfig) -> LLMCheck:
    """``check_llm``, logged in one line: INFO when answers should work, WARNING when not."""
    found = await check_llm(config)
    log.log(logging.INFO if found.ok else logging.WARNING, "%s", found.line)
    return found


class ChatClient:
    """Posts ``/chat/completions`` requests; owns one aiohttp session, opened lazily and closed with ``close``."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._session: aiohttp.ClientSession | None = None

    def _headers(self) -> dict[str, str]:
        if self.config.api_key is None:
            return {}
        return {"Authorization": f"Bearer {self.config.api_key}"}

    async def complete(self, messages: list[dict[str, str]]) -> str:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.config.timeout_s))
        body = {"model": self.config.model, "messages": messages, "max_tokens": MAX_ANSWER_TOKENS, "stream": False}
        url = f"{self.config.base_url}/chat/completions"
        try:
            async with self._session.post(url, json=body, headers=self._headers()) as response:
                if response.status != 200:
                    detail = (await response.text())[:200]
                    raise LLMError(f"{url} answered HTTP {response.status}: {detail}")
                data = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise LLMError(f"{url} failed: {type(error).__name__}: {error}") from error
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as error:
            raise LLMError(f"{url} gave no choices[0].message.content") from error
        if not isinstance(text, str) or not text.strip():
            raise LLMError(f"{url} gave an empty answer")
        return text.strip()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
