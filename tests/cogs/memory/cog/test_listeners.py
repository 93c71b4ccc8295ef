"""The memory cog's gateway side as its log shows it: the LLM it answers through, without the URL's password."""

from __future__ import annotations

import logging

import pytest

from bot import MemoryBot
from cogs.memory.runtime.config import load_settings


async def test_the_llm_endpoint_is_logged_without_its_password(discord_bot: MemoryBot,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    listeners = type(discord_bot.get_cog("MemoryListeners"))  # the class of the extension loaded now
    discord_bot.config = load_settings({"LLM_BASE_URL": "http://bot:hunter2@127.0.0.1:9/v1", "LLM_MODEL": "qwen3"},
                                       None)
    cog = listeners(discord_bot)
    with caplog.at_level(logging.INFO):
        await cog.cog_load()
        await cog.cog_unload()
    [line] = [record.getMessage() for record in caplog.records if "Recall answers through" in record.getMessage()]
    assert line == "Recall answers through the LLM at http://bot:***@127.0.0.1:9/v1 (model qwen3)"
    assert "hunter2" not in caplog.text
