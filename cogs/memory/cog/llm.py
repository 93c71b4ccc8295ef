"""A minimal client for any OpenAI-compatible chat endpoint (Ollama, vLLM, llama.cpp's server, OpenAI)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import aiohttp

__all__ = ("LLMConfig", "LLMError", "ChatClient")

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 60.0
MAX_ANSWER_TOKENS = 400


class LLMError(Exception):
    """The endpoint could not be reached or gave an answer we cannot use."""


@dataclass(frozen=True, slots=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> LLMConfig | None:
        """``LLM_BASE_URL`` and ``LLM_MODEL`` turn the LLM answer on; ``LLM_API_KEY`` is optional (Ollama needs none)."""
        env = os.environ if environ is None else environ
        base_url = env.get("LLM_BASE_URL", "").strip()
        model = env.get("LLM_MODEL", "").strip()
        if not base_url or not model:
            return None
        return cls(base_url=base_url.rstrip("/"), model=model, api_key=env.get("LLM_API_KEY") or None)


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
