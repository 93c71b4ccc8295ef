"""The OpenAI-compatible client against a real local HTTP server that records what it was sent."""

import json

import pytest
from aiohttp import web

from cogs.memory.cog.llm import ChatClient, LLMConfig, LLMError
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


def test_no_base_url_means_no_llm():
    assert LLMConfig.from_env({"LLM_MODEL": "llama3"}) is None


def test_config_reads_the_three_variables():
    config = LLMConfig.from_env({"LLM_BASE_URL": "http://localhost:11434/v1/", "LLM_MODEL": "llama3", "LLM_API_KEY": "k"})
    assert config == LLMConfig(base_url="http://localhost:11434/v1", model="llama3", api_key="k")


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
