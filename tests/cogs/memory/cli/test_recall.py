"""``search`` filters and ``ask``; options after the command, --version, help for every command."""

import argparse
import json
import logging
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web

from cogs.memory.cli import build_parser, parse_args, version
from cogs.memory.cli.recall import format_explanation, format_parts
from cogs.memory.records import Boost, Hit, PooledBy, ScoreParts
from tests.fixtures.discord import chat_completions_server


def texts(out: str) -> list[str]:
    return sorted(re.findall(r"^    (?!message id )(.*)$", out, flags=re.M))


async def test_search_by_author(cli, two_guilds):
    code, out, _ = await cli("search", "picnic", "--guild", "1", "--author", "6", "--no-rerank")
    assert (code, texts(out)) == (0, ["I will bake a picnic cake", "picnic photos are up"])


async def test_search_between_times_in_utc(cli, two_guilds):
    _, out, _ = await cli("search", "picnic", "--guild", "1", "--after", "2024-05-01T12:00",
                          "--before", "2024-05-01T14:04+02:00", "--no-rerank")
    assert texts(out) == ["I will bake a picnic cake", "bring blankets to the picnic"]


async def test_search_marks_times_utc_and_names_the_channel(cli, two_guilds):
    _, out, _ = await cli("search", "photos", "--guild", "1", "--channel", "21", "--no-rerank")
    assert re.fullmatch(r" 1\. score=\d\.\d{4} rerank_score=- #photos bob 2024-05-01 12:05 UTC\n"
                        r"    picnic photos are up\n"
                        r"    message id 33 by bob \(user id 6\) in #photos \(channel id 21\): "
                        r"https://discord\.com/channels/1/21/33\n", out)


async def test_a_hit_in_a_channel_whose_name_memory_never_saw_shows_its_id(cli, two_guilds):
    _, out, _ = await cli("search", "hello", "--guild", "2", "--no-rerank")
    assert re.match(r" 1\. score=\d\.\d{4} rerank_score=- #40 alice 2024-05-01 12:00 UTC\n", out)


def test_a_bad_date_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args(["search", "picnic", "--after", "May 1st"])
    assert (exited.value.code, capsys.readouterr().err.splitlines()[-1]) == (
        2, "python -m cogs.memory search: error: argument --after: must be a date like 2024-05-01 or "
           "2024-05-01T12:30 (UTC); you gave 'May 1st'")


def test_shared_options_come_before_or_after_the_command():
    after = parse_args(["search", "x", "--db", "after.sqlite3", "--profile", "p"])
    before = parse_args(["--db", "before.sqlite3", "search", "x"])
    assert (after.db, after.profile, before.db, before.profile) == (Path("after.sqlite3"), "p",
                                                                    Path("before.sqlite3"), None)


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args(["--version"])
    assert (exited.value.code, capsys.readouterr().out) == (0, f"python -m cogs.memory {version()}\n")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", version())


def test_every_command_has_help_and_the_exit_codes_are_documented():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {action.dest: action.help for action in commands._choices_actions}
    assert set(helps) == set(commands.choices) and all(helps.values())
    assert {"stats", "guilds", "channels", "forget", "ask"} <= set(helps)
    assert "exit status: 0 it worked; 1 something failed" in parser.format_help()
    assert "2 usage error" in parser.format_help()


async def test_ask_without_an_llm_prints_what_it_recalled_and_what_to_set(cli, two_guilds, monkeypatch):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.delenv("LLM_MODEL", raising=False)
    code, out, err = await cli("ask", "when is the picnic", "--guild", "1")
    assert code == 0
    assert out.splitlines()[0] == "recalled:"
    hits = re.findall(r"^ *\d+\. score=\d\.\d{4} rerank_score=(\S+) ", out, flags=re.M)
    assert hits and all(re.fullmatch(r"-?\d\.\d{4}", score) for score in hits)
    assert err.splitlines()[0] == ("answering as the host: a terminal knows no member's permissions, so every channel "
                                   "in memory is read")
    assert err.splitlines()[-1].startswith("no answer: answers need an OpenAI-compatible endpoint: set LLM_BASE_URL")


async def test_ask_gives_the_llms_answer_from_the_recalled_messages(cli, two_guilds, monkeypatch):
    prompts = []

    async def answer(request: web.Request) -> web.Response:
        prompts.append(await request.json())
        return web.json_response({"choices": [{"message": {"content": "Saturday, with blankets."}}]})

    async with chat_completions_server(answer) as url:
        monkeypatch.setenv("LLM_BASE_URL", url)
        monkeypatch.setenv("LLM_MODEL", "llama3")
        monkeypatch.delenv("LLM_API_KEY", raising=False)
        code, out, _ = await cli("ask", "when is the picnic", "--guild", "1", "--channel", "20")
    assert (code, out.split("\n")[-3:]) == (0, ["answer (llama3):", "Saturday, with blankets.", ""])
    user = prompts[0]["messages"][1]["content"]
    assert user.startswith("The server's host asks:\nwhen is the picnic\n")
    assert "> the picnic moved to Saturday" in user and "photos" not in user


async def test_ask_says_when_the_llm_fails(cli, two_guilds, monkeypatch):
    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=404, text="no such route")

    async with chat_completions_server(broken) as url:
        monkeypatch.setenv("LLM_BASE_URL", url)
        monkeypatch.setenv("LLM_MODEL", "llama3")
        code, _, err = await cli("ask", "when is the picnic", "--guild", "1")
    assert code == 1 and err.splitlines()[-1].startswith("error: the LLM answer failed (")


# -- a reranker that cannot load: one line saying what to do, once; results in first-stage order, exit 0 ---------

REPO = Path(__file__).resolve().parents[4]
UNCACHED = "no-such-org/never-cached-reranker"


def reranker_not_cached(profiles_dir: Path) -> Path:
    """tiny-a with a reranker model that is in no cache (and, offline, cannot be downloaded)."""
    path = profiles_dir / "tiny-a.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r'(?m)^model = ".*"$', f'model = "{UNCACHED}"', text), encoding="utf-8")
    return path


def test_search_with_a_reranker_that_cannot_load_says_what_to_do_once(two_guilds, tiny_profiles_dir, tmp_path):
    profile = reranker_not_cached(tiny_profiles_dir)
    env = {key: value for key, value in os.environ.items() if key != "LOG_LEVEL"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "cogs.memory", "--db", str(two_guilds), "--index-dir",
                           str(tmp_path / "data" / "idx"), "--profile", str(profile), "search", "picnic", "--guild",
                           "1", "--channel", "21"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert texts(done.stdout) == ["picnic photos are up"]  # first-stage order, rerank_score -
    said = [line for line in done.stderr.splitlines() if "reranker unavailable" in line]
    assert len(said) == 1 and said[0].startswith("WARNING cogs.memory.rerank.service: reranker unavailable, recalls "
                                                 f"keep first-stage order: {UNCACHED} is not in the Hugging Face cache")
    assert "to fix it:" in said[0] and "HF_HUB_OFFLINE" in said[0] and "in profile tiny-a's .toml file" in said[0]
    assert "Traceback" not in done.stderr and "rerank: not loaded" not in done.stderr
    assert "We couldn't connect" not in done.stderr  # transformers' own multi-line words


async def test_ask_with_a_reranker_that_cannot_load_says_it_once_and_answers(cli, two_guilds, tiny_profiles_dir,
                                                                              monkeypatch, caplog):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.delenv("LLM_MODEL", raising=False)
    reranker_not_cached(tiny_profiles_dir)
    with caplog.at_level(logging.WARNING):
        code, out, err = await cli("ask", "when is the picnic", "--guild", "1")
    assert code == 0 and out.splitlines()[0] == "recalled:"
    assert re.findall(r"rerank_score=(\S+)", out) and set(re.findall(r"rerank_score=(\S+)", out)) == {"-"}
    said = [record.getMessage() for record in caplog.records if "reranker unavailable" in record.getMessage()]
    assert len(said) == 1 and "to fix it:" in said[0]
    assert "reranker unavailable" not in err  # said by the log, not again


def test_a_boost_for_a_name_the_question_gave_is_a_term_of_the_explained_sum() -> None:
    parts = ScoreParts(keyword=1.0, vector=None, vector_weight=0.4, keyword_weight=0.6, missing=-0.2,
                       boosts=(Boost("author @alice named in the question", 0.5),
                               Boost("posted yesterday, as the question says", 0.25)))
    assert parts.total == pytest.approx(1.15)
    assert format_parts(parts.total, parts) == (
        "score 1.1500 = keyword 1.0000 x 0.6000 + not found by a side -0.2000 + "
        "boost (author @alice named in the question) +0.5000 + boost (posted yesterday, as the question says) +0.2500")


def test_a_hit_the_pool_brought_says_which_hit_brought_it_and_how() -> None:
    hit = Hit(7, 1, 2, 3, "bob", "Saturday at 3", datetime(2024, 5, 1, tzinfo=UTC), 0.1, ("context",), 9,
              rerank_score=0.9, pooled_by=PooledBy(5, "reply"))
    said = format_explanation(1, hit)
    assert said.splitlines()[-1] == "    in the reranker's pool as a Discord reply to message 5, scored with it beside"
    assert "reranker's pool" not in format_explanation(1, Hit(5, 1, 2, 4, "alice", "when is the picnic?",
                                                               datetime(2024, 5, 1, tzinfo=UTC), 1.0, ("keyword",), 1))
