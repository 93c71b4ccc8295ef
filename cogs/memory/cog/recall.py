"""Turning a chat message into a memory query, and recalled memories into what the bot says or sends to an LLM."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

import discord

from ..prompt import SYSTEM_PROMPT, build_chat_messages, format_quoted_memories
from ..records import Candidate

__all__ = (
    "SYSTEM_PROMPT",
    "NO_MEMORIES_REPLY",
    "ONLY_SHARED_CHANNELS_NOTE",
    "build_query",
    "strip_mentions",
    "jump_url",
    "snippet",
    "format_memory_line",
    "format_memories",
    "format_quoted_memories",
    "with_note",
    "build_chat_messages",
)

NO_MEMORIES_REPLY = "I don't remember anything about that in the channels you can read."
# Ends a public reply whenever the asker reads channels that some of this channel's readers cannot: it says so
# whatever the question, so it never tells the channel that a hidden channel held an answer.
ONLY_SHARED_CHANNELS_NOTE = (
    "I only used channels that everyone here can read. Use `/memory search` to search every channel you can read, "
    "privately."
)
MEMORIES_HEADER = "Here is what I remember:"
SNIPPET_CHARS = 200
DISCORD_MESSAGE_LIMIT = 2000
# How much of the earlier turns to add when the asker's own message says little ("what about it?").
SHORT_QUERY_WORDS = 6
CONTEXT_CHARS = 300

_MENTION = re.compile(r"<@!?\d+>|<@&\d+>")


def strip_mentions(content: str) -> str:
    return " ".join(_MENTION.sub(" ", content).split())


def build_query(content: str, context: Sequence[str] = ()) -> str:
    """The asker's words; when they are short, the replied-to or previous turns (newest first) fill in the topic."""
    query = strip_mentions(content)
    if len(query.split()) >= SHORT_QUERY_WORDS:
        return query
    extra: list[str] = []
    budget = CONTEXT_CHARS
    for turn in context:
        turn = strip_mentions(turn)
        if not turn or budget <= 0:
            continue
        extra.append(turn[:budget])
        budget -= len(turn)
    return "\n".join([*reversed(extra), query]).strip()


def jump_url(candidate: Candidate) -> str:
    return f"https://discord.com/channels/{candidate['guild_id']}/{candidate['channel_id']}/{candidate['message_id']}"


def snippet(content: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(content.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _created_at(candidate: Candidate) -> datetime:
    return datetime.fromisoformat(candidate["created_at"])


def _score_text(candidate: Candidate) -> str:
    rerank = candidate.get("rerank_score")
    if rerank is None:
        return f"score {candidate['score']:.3f}"
    return f"rerank_score {rerank:.2f}"


def format_memory_line(candidate: Candidate) -> str:
    """One memory: author, relative date (rendered by the client), snippet, score and a jump link."""
    when = discord.utils.format_dt(_created_at(candidate), "R")
    text = discord.utils.escape_mentions(snippet(candidate["content"]))
    return f"**{candidate['author_name']}** {when}: {text} ({_score_text(candidate)}) {jump_url(candidate)}"


def with_note(text: str, note: str | None) -> str:
    """``text`` with ``note`` on a last line of its own, cut so that both fit in one Discord message."""
    if note is None:
        return text[:DISCORD_MESSAGE_LIMIT]
    return text[: DISCORD_MESSAGE_LIMIT - len(note) - 1] + "\n" + note


def format_memories(candidates: Sequence[Candidate], note: str | None = None) -> str:
    """The embedded answer: the most relevant memories, as many as fit in one Discord message with ``note``."""
    if not candidates:
        return with_note(NO_MEMORIES_REPLY, note)
    room = DISCORD_MESSAGE_LIMIT - (0 if note is None else len(note) + 1)
    lines = [MEMORIES_HEADER]
    length = len(MEMORIES_HEADER)
    for candidate in candidates:
        line = "- " + format_memory_line(candidate)
        if length + 1 + len(line) > room:
            break
        lines.append(line)
        length += 1 + len(line)
    return with_note("\n".join(lines), note)
