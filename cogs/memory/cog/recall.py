"""Turning a chat message into a memory query, and recalled memories into what the bot says or sends to an LLM."""

from __future__ import annotations

import re
from collections.abc import Sequence

import discord

from ..prompt import SYSTEM_PROMPT, build_chat_messages, format_quoted_memories
from ..records import Hit

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


def jump_url(hit: Hit) -> str:
    return f"https://discord.com/channels/{hit.guild_id}/{hit.channel_id}/{hit.message_id}"


def snippet(content: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(content.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _score_text(hit: Hit) -> str:
    if hit.rerank_score is None:
        return f"score {hit.score:.3f}"
    return f"rerank_score {hit.rerank_score:.2f}"


def format_memory_line(hit: Hit) -> str:
    """One memory: author, relative date (rendered by the client), snippet, score and a jump link."""
    when = discord.utils.format_dt(hit.created_at, "R")
    text = discord.utils.escape_mentions(snippet(hit.content))
    return f"**{hit.author_name}** {when}: {text} ({_score_text(hit)}) {jump_url(hit)}"


def with_note(text: str, note: str | None) -> str:
    """``text`` with ``note`` on a last line of its own, cut so that both fit in one Discord message."""
    if note is None:
        return text[:DISCORD_MESSAGE_LIMIT]
    return text[: DISCORD_MESSAGE_LIMIT - len(note) - 1] + "\n" + note


def format_memories(hits: Sequence[Hit], note: str | None = None) -> str:
    """The embedded answer: the most relevant memories, as many as fit in one Discord message with ``note``."""
    if not hits:
        return with_note(NO_MEMORIES_REPLY, note)
    room = DISCORD_MESSAGE_LIMIT - (0 if note is None else len(note) + 1)
    lines = [MEMORIES_HEADER]
    length = len(MEMORIES_HEADER)
    for hit in hits:
        line = "- " + format_memory_line(hit)
        if length + 1 + len(line) > room:
            break
        lines.append(line)
        length += 1 + len(line)
    return with_note("\n".join(lines), note)
