"""What memory holds of one member, as both stores read it back: their channels, their messages one at a time, where
their messages were quoted (ids and times, never text), and when they last downloaded it all."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ("MemberChannel", "MemberMessage", "Quotation", "QuotationKind", "QUOTATION_KINDS", "member_pages")

# How a recall showed a member's message to someone else: a public answer listing memories, an automatic recall in a
# recall channel, an LLM answer that was given the message, a private /memory search.
QuotationKind = Literal["answer", "auto", "llm", "search"]
QUOTATION_KINDS: tuple[QuotationKind, ...] = ("answer", "auto", "llm", "search")


@dataclass(frozen=True, slots=True)
class MemberChannel:
    """One channel (or thread) holding a member's stored messages: how many, the oldest's and newest's times."""

    channel_id: int
    parent_channel_id: int | None
    private_thread: bool
    messages: int
    first_at: float
    last_at: float


@dataclass(frozen=True, slots=True)
class MemberMessage:
    """One of a member's stored messages as the member may have it back: no other member's text (a reply's target
    by id only)."""

    message_id: int
    channel_id: int
    parent_channel_id: int | None
    content: str
    created_at: float
    edited_at: float | None
    reply_to_id: int | None


@dataclass(frozen=True, slots=True)
class Quotation:
    """One showing of a member's message to someone else: the quoted message (by id) and its channel, when, how, and
    for a public answer where the answer is (``answer_channel_id``/``answer_message_id``); never who asked, never
    text."""

    guild_id: int
    author_id: int
    message_id: int
    channel_id: int
    quoted_at: float
    kind: QuotationKind
    answer_channel_id: int | None = None
    answer_message_id: int | None = None


async def member_pages(fetch_page: Callable[[tuple[float, int], int], Awaitable[Sequence[Sequence[Any]]]], page: int,
                       newest_first: bool) -> AsyncIterator[MemberMessage]:
    """Every message ``fetch_page(after, page)`` returns (MemberMessage's columns in order), page after page, keyed on
    (created_at, message_id): ascending, or descending with ``newest_first``."""
    after: tuple[float, int] = (float("inf"), 2**63 - 1) if newest_first else (float("-inf"), -1)
    while True:
        rows = await fetch_page(after, page)
        for row in rows:
            yield MemberMessage(*row)
        if len(rows) < page:
            return
        after = (rows[-1][4], rows[-1][0])
