"""The OpenAI-compatible client against a real local HTTP server that records what it was sent."""

import asyncio
import json
import logging
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from cogs.memory.llm import ChatClient, LLMCheck, LLMConfig, LLMError, check_llm, log_llm_check
from cogs.memory.runtime.config import load_settings
from tests.fixtures.discord import chat_completions_server


@pytest.fixture
async def chat_server():
    """A /v1/chat/completions endpoint on 127.0.0.1; set ``server.reply`` to change what it answers."""
    requests = []

    async def completions(request: web.Request) -> web.Response:
        requests.append({"headers": dict(request.headers), "body": await request.json()})
        status, body = server.reply
        return web.Response(status=status, text=body, content_type="application/json")

    class Server:
        reply = (200, json.dumps({"choices": [{"message": {"role": "assistant", "content": " Alice said Tuesday. "}}]}))

    server = Server()
    server.requests = requests
    async with chat_completions_server(completions) as url:
        server.url = url
        yield server


@pytest.fixture
async def client(chat_server):
    client = ChatClient(LLMConfig(base_url=chat_server.url, model="qwen3:0.6b", api_key="sk-test"))
    yield client
    await client.close()


def test_nothing_set_means_no_llm_and_nothing_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="cogs.memory.llm"):
        assert LLMConfig.from_settings(load_settings({}, None)) is None
    assert caplog.messages == []


@pytest.mark.parametrize(("environ", "line"), [
    ({"LLM_MODEL": "llama3"}, "LLM answers are off: LLM_MODEL is set but LLM_BASE_URL is not; set both (or neither)"),
    ({"LLM_BASE_URL": "http://localhost:11434/v1"},
     "LLM answers are off: LLM_BASE_URL is set but LLM_MODEL is not; set both (or neither)"),
])
def test_half_configured_means_no_llm_and_a_line_saying_what_is_missing(environ, line, caplog):
    with caplog.at_level(logging.WARNING, logger="cogs.memory.llm"):
        assert LLMConfig.from_settings(load_settings(environ, None)) is None
    assert caplog.messages == [line]


def test_config_reads_the_three_variables():
    config = LLMConfig.from_settings(load_settings(
        {"LLM_BASE_URL": "http://localhost:11434/v1/", "LLM_MODEL": "llama3", "LLM_API_KEY": "k"}, None))
    assert config == LLMConfig(base_url="http://localhost:11434/v1", model="llama3", api_key="k")


# -- the start-up probe: GET {base}/models once -------------------------------------------------------------------


@asynccontextmanager
async def models_server(routes: dict[str, list[str]]):
    """GET <path> answers an OpenAI-style model list for each path in ``routes``; any other path is a 404.
    Yields the server's root URL (no /v1) and the Authorization headers it was sent."""
    seen = []

    async def models(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model"}
                                                             for name in routes[request.path]]})

    app = web.Application()
    for path in routes:
        app.router.add_get(path, models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", seen
    finally:
        await runner.cleanup()


async def test_a_reachable_endpoint_lists_its_models_and_finds_the_model():
    async with models_server({"/v1/models": ["llama3", "qwen3:0.6b"]}) as (root, seen):
        found = await check_llm(LLMConfig(base_url=f"{root}/v1", model="llama3", api_key="sk-test"))
    assert found == LLMCheck(True, f"LLM at {root}/v1 is reachable: 2 models listed (llama3, qwen3:0.6b), "
                                   "llama3 among them")
    assert seen == ["Bearer sk-test"]


async def test_a_model_the_endpoint_does_not_list_is_a_warning():
    async with models_server({"/v1/models": ["qwen3:0.6b"]}) as (root, _):
        found = await check_llm(LLMConfig(base_url=f"{root}/v1", model="llama3"))
    assert found == LLMCheck(False, f"LLM at {root}/v1 is reachable, but LLM_MODEL llama3 is not among the 1 models "
                                    "it lists (qwen3:0.6b)")


async def test_a_404_says_to_check_the_base_url():
    async with models_server({}) as (root, _):
        found = await check_llm(LLMConfig(base_url=f"{root}/v1", model="llama3"))
    assert found == LLMCheck(False, f"LLM at {root}/v1: {root}/v1/models answered HTTP 404; check LLM_BASE_URL "
                                    "(an OpenAI-compatible API, ending in /v1)")


async def test_a_base_url_without_v1_that_404s_is_told_to_add_it():
    async with models_server({"/v1/models": ["llama3"]}) as (root, _):
        found = await check_llm(LLMConfig(base_url=root, model="llama3"))
    assert found == LLMCheck(False, f"LLM_BASE_URL {root} has no /v1 and {root}/models answered HTTP 404: add /v1 "
                                    f"(e.g. {root}/v1)")


async def test_a_base_url_without_v1_that_answers_is_accepted():
    async with models_server({"/models": ["llama3"]}) as (root, _):
        found = await check_llm(LLMConfig(base_url=root, model="llama3"))
    assert found == LLMCheck(True, f"LLM at {root} is reachable (no /v1, but it answers: accepted): 1 models listed "
                                   "(llama3), llama3 among them")


async def test_an_unreachable_endpoint_is_one_warning_line(caplog):
    async with models_server({}) as (root, _):
        pass  # closed: nothing listens on its port any more
    with caplog.at_level(logging.INFO, logger="cogs.memory.llm"):
        found = await log_llm_check(LLMConfig(base_url=f"{root}/v1", model="llama3"))
    assert not found.ok and found.line.startswith(f"LLM at {root}/v1 is unreachable (ClientConnectorError")
    assert found.line.endswith("); answers fail until it is up")
    assert [(record.levelno, record.getMessage()) for record in caplog.records] == [(logging.WARNING, found.line)]


async def test_the_answer_is_the_first_choice_stripped(client):
    assert await client.complete([{"role": "user", "content": "when?"}]) == "Alice said Tuesday."


async def test_the_request_names_the_model_and_sends_the_messages(client, chat_server):
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "when?"}]
    await client.complete(messages)
    body = chat_server.requests[0]["body"]
    assert (body["model"], body["messages"], body["stream"]) == ("qwen3:0.6b", messages, False)


async def test_the_api_key_is_a_bearer_token(client, chat_server):
    await client.complete([{"role": "user", "content": "when?"}])
    assert chat_server.requests[0]["headers"]["Authorization"] == "Bearer sk-test"


async def test_an_http_error_is_an_llm_error(client, chat_server):
    chat_server.reply = (500, '{"error": "model not loaded"}')
    with pytest.raises(LLMError, match="HTTP 500"):
        await client.complete([{"role": "user", "content": "when?"}])


async def test_a_malformed_answer_is_an_llm_error(client, chat_server):
    chat_server.reply = (200, '{"choices": []}')
    with pytest.raises(LLMError, match="no choices"):
        await client.complete([{"role": "user", "content": "when?"}])


async def test_an_unreachable_server_is_an_llm_error():
    client = ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    with pytest.raises(LLMError, match="failed"):
        await client.complete([{"role": "user", "content": "when?"}])
    await client.close()


async def test_a_base_url_with_a_password_is_named_without_it():
    """An endpoint behind basic auth (http://user:password@host/v1): neither the probe's line nor an answer's error
    (both logged by the bot, printed by ask) holds the password."""
    async with models_server({}) as (root, _):
        pass  # closed
    base = root.replace("http://", "http://bot:hunter2@") + "/v1"
    found = await check_llm(LLMConfig(base_url=base, model="llama3"))
    assert found.line.startswith(f"LLM at {root.replace('http://', 'http://bot:***@')}/v1 is unreachable (")
    client = ChatClient(LLMConfig(base_url=base, model="m"))
    with pytest.raises(LLMError) as failed:
        await client.complete([{"role": "user", "content": "when?"}])
    await client.close()
    assert "hunter2" not in found.line + str(failed.value) and "bot:***@" in str(failed.value)


async def test_the_cog_checks_the_llm_once_as_it_loads(discord_bot, monkeypatch, caplog):
    async with models_server({"/v1/models": ["llama3"]}) as (root, seen):
        monkeypatch.setattr(discord_bot, "config", load_settings(
            {"LLM_BASE_URL": f"{root}/v1", "LLM_MODEL": "llama3"}, None))
        with caplog.at_level(logging.INFO, logger="cogs.memory.llm"):
            await discord_bot.reload_extension("cogs.memory.cog")
            expected = f"LLM at {root}/v1 is reachable: 1 models listed (llama3), llama3 among them"
            for _ in range(3000):  # up to 30 s: the check runs in the background
                if expected in caplog.messages:
                    break
                await asyncio.sleep(0.01)
    assert caplog.messages.count(expected) == 1 and len(seen) == 1
