"""The reranker's pool: the first stage's best hits, widened by the context of the strongest of them.

A loan (loans.py) moves a first-stage score to the messages around a hit, so context can outrank a match on its
own. Here context only earns a place in the pool the cross-encoder judges: each of the strongest hits brings its
Discord replies, the message it replies to and its author's adjacent messages (and, where asked, the answers its
question guesses and the question before it) right after it, each read by the reranker with the hit beside it
("alice: when is the picnic?\\nbob: Saturday at 3"); they displace the first stage's tail. Whether one of them ranks
is the reranker's call. Context is read under the search's own filters, so a message the member may not read,
another guild's, or a forgotten one never enters the pool: the first stage's own read where it holds a hit's window
(first_stage.ContextRead), through the search engine for the rest.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple, Protocol

from ..language import questions
from ..records import Hit, PooledBy, SearchFilters
from ..runtime.ranking import RankingTuning
from ..store.rows import CandidateRow, from_timestamp
from .context import ChannelWindow, Window
from .first_stage import ContextRead
from .structure import ChannelStructure, strength

__all__ = ("ContextReader", "Lent", "Pooled", "context_of", "judged", "lent_by_hits", "pool", "widen")

class ContextReader(Protocol):
    """The search engine's context read (store/protocol.SearchEngine.context)."""

    async def context(self, message_ids: Sequence[int],
                      filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]: ...
    async def channel_structure(self, guild_id: int, channel_id: int) -> ChannelStructure: ...


class Lent(NamedTuple):
    """A message a hit brings into the pool, and how it relates to that hit (records.PooledBy's kinds)."""

    row: CandidateRow
    kind: str


class Pooled(NamedTuple):
    """One candidate of the pool: the hit it ranks as, and the text the reranker reads for it (a context candidate's
    own message and its lender's, in the order they were posted, each after its author's name)."""

    hit: Hit
    text: str


def context_of(source: CandidateRow, window: ChannelWindow, rows: Mapping[int, CandidateRow],
               reply_window: int, guessed: bool, burst: bool = True,
               by_message: Mapping[int, CandidateRow] | None = None) -> list[Lent]:
    """What ``source`` may bring into the pool, best first and each once: its Discord replies (of ``window``), the
    message it replies to, with ``burst`` its author's previous and next message, and with ``guessed`` the answers
    its question guesses (questions.answers) and the previous message when another author asked it. Only messages
    in ``rows`` (those that passed the search's filters) are brought; ``by_message``: ``rows`` by message id (built
    here when not given)."""
    if by_message is None:
        by_message = {row.message_id: row for row in rows.values()}

    def passing(rowids: Sequence[int | None]) -> list[CandidateRow]:
        return [rows[rowid] for rowid in rowids if rowid is not None and rowid in rows]

    previous = passing([window.previous])
    following = passing(window.after[:1])
    lent = [Lent(row, "reply") for row in passing(window.replies)]
    if source.reply_to_id is not None and source.reply_to_id in by_message:
        lent.append(Lent(by_message[source.reply_to_id], "replied"))
    if burst:
        lent += [Lent(row, "burst") for row in (*previous, *following) if row.author_id == source.author_id]
    if guessed:
        if questions.asks(source.content):
            after = [(rowid, rows[rowid].author_id) for rowid in window.after[:reply_window] if rowid in rows]
            asked = previous[0].author_id if previous else None
            lent += [Lent(rows[rowid], "answer") for rowid in questions.answers(source.author_id, asked, after)]
        lent += [Lent(row, "question") for row in previous
                 if row.author_id != source.author_id and questions.asks(row.content)]
    seen = {source.message_id}
    kept = []
    for item in lent:
        if item.row.message_id not in seen:
            seen.add(item.row.message_id)
            kept.append(item)
    return kept


def lent_by_hits(hits: Sequence[Hit], window: Mapping[int, ChannelWindow], rows: Mapping[int, CandidateRow],
                 tuning: RankingTuning, dialogues: Collection[int] = ()) -> dict[int, list[Lent]]:
    """``context_of`` each of ``hits`` that passed (``rows``; ``window`` by row id, as the engine read them), by
    the hit's message id; with the tuning's ``pool_groups_only``, a hit in one of ``dialogues`` (channel ids)
    brings only what Discord links to it."""
    rowid_of = {row.message_id: rowid for rowid, row in rows.items()}
    by_message = {message_id: rows[rowid] for message_id, rowid in rowid_of.items()}
    lent: dict[int, list[Lent]] = {}
    for hit in hits:
        rowid = rowid_of.get(hit.message_id)
        if rowid is not None and rowid in window:
            ordered = not tuning.pool_groups_only or hit.channel_id not in dialogues
            lent[hit.message_id] = context_of(rows[rowid], window[rowid], rows, tuning.reply_window,
                                              ordered and tuning.pool_guessed, ordered and tuning.pool_burst,
                                              by_message)
    return lent


def widen(hits: Sequence[Hit], lent: Mapping[int, Sequence[Lent]], depth: int, lenders: int,
          per_hit: int) -> list[Pooled]:
    """The pool of ``depth`` candidates: ``hits`` in first-stage order, each of the first ``lenders`` followed by up
    to ``per_hit`` of what it lends (``lent``, by its message id), each message once (where it first comes), cut to
    ``depth``: context displaces the first stage's tail. A first-stage hit reads its own text; a context candidate
    reads its lender's beside its own and carries ``pooled_by`` (a message the first stage also ranked lower keeps
    that hit's score; another carries its lender's score and rank)."""
    ranked = {hit.message_id: hit for hit in hits}
    pooled: list[Pooled] = []
    seen: set[int] = set()
    for position, hit in enumerate(hits):
        if len(pooled) >= depth:
            break
        if hit.message_id not in seen:
            seen.add(hit.message_id)
            pooled.append(Pooled(hit, hit.content))
        if position >= lenders:
            continue
        for row, kind in [item for item in lent.get(hit.message_id, ()) if item.row.message_id not in seen][:per_hit]:
            seen.add(row.message_id)
            base = ranked.get(row.message_id) or _as_hit(row, hit)
            pooled.append(Pooled(dataclasses.replace(base, pooled_by=PooledBy(hit.message_id, kind)),
                                 _beside(row, hit)))
    return pooled[:depth]


async def pool(engine: ContextReader, hits: Sequence[Hit], filters: SearchFilters, depth: int,
               tuning: RankingTuning, read: ContextRead | None = None) -> list[Pooled]:
    """The reranker's pool for ``hits`` (the first stage's, best first): ``widen`` by the tuning's pool rule, the
    context taken from ``read`` (what the first stage read under the same ``filters``) where it holds a lender's,
    the rest read by ``engine`` under ``filters`` (the store's reads run off the event loop). Without lenders, the
    first ``depth`` hits as they are; below the tuning's ``pool_full_from``, only the first hit's Discord links."""
    if depth < tuning.pool_full_from:
        tuning = dataclasses.replace(tuning, pool_lenders=min(tuning.pool_lenders, 1), pool_burst=False,
                                     pool_guessed=False)
    lenders = min(tuning.pool_lenders, len(hits))
    if lenders <= 0 or tuning.pool_per_hit <= 0:
        return [Pooled(hit, hit.content) for hit in hits[:depth]]
    window, rows = await _context(engine, hits[:lenders], filters, tuning.reply_window, read)
    dialogues = await _dialogues(engine, hits[:lenders], filters.guild_id, tuning)
    return widen(hits, lent_by_hits(hits[:lenders], window, rows, tuning, dialogues), depth, lenders,
                 tuning.pool_per_hit)


async def _context(engine: ContextReader, hits: Sequence[Hit], filters: SearchFilters, reply_window: int,
                   read: ContextRead | None) -> tuple[Mapping[int, ChannelWindow], Mapping[int, CandidateRow]]:
    """The windows and passing rows ``hits`` lend from: ``read``'s for each hit it holds the window of (read as deep
    as ``reply_window``) and, when the hit replies, the message it replies to; ``engine`` reads the rest's. The
    message a hit replies to that ``read`` lacks may have failed the filters or not been read at all: that hit is
    read again."""
    if read is None or read.reply_window != reply_window:
        return await engine.context([hit.message_id for hit in hits], filters)
    by_message = {row.message_id: (rowid, row) for rowid, row in read.rows.items()}
    missing = []
    for hit in hits:
        rowid, row = by_message.get(hit.message_id, (None, None))
        if row is None or rowid not in read.window or (row.reply_to_id is not None
                                                       and row.reply_to_id not in by_message):
            missing.append(hit.message_id)
    if not missing:
        return read.window, read.rows
    window, rows = await engine.context(missing, filters)
    return {**read.window, **window}, {**read.rows, **rows}


async def _dialogues(engine: ContextReader, hits: Sequence[Hit], guild_id: int,
                     tuning: RankingTuning) -> set[int]:
    """The channels of ``hits`` the first stage lends in by the order of messages at full weight (every one when
    it reads no structure); read only when the tuning's pool_groups_only needs them."""
    channels = sorted({hit.channel_id for hit in hits})
    if not tuning.pool_groups_only or not (tuning.pool_burst or tuning.pool_guessed):
        return set()
    if not tuning.read_structure:
        return set(channels)
    read = await asyncio.gather(*(engine.channel_structure(guild_id, channel) for channel in channels))
    return {channel for channel, structure in zip(channels, read, strict=True)
            if strength(structure.dialogue, tuning.dialogue_full_at) >= 1.0}


def judged(pooled: Sequence[Pooled], scores: Sequence[float | None],
           first: Sequence[Hit]) -> tuple[list[Hit], list[float | None]]:
    """The candidates and scores second_stage.reranked orders: each pool candidate the reranker scored (``scores[i]``
    is ``pooled[i]``'s), then every first-stage hit it did not, in first-stage order and unscored. A context candidate
    enters only when judged: what nothing scored (a reranker still loading, past its time budget) keeps the first
    stage's order, the hits context displaced included."""
    kept: list[tuple[Hit, float | None]] = [(entry.hit, score) for entry, score in zip(pooled, scores, strict=True)
                                            if score is not None]
    scored = {hit.message_id for hit, _ in kept}
    kept += [(hit, None) for hit in first if hit.message_id not in scored]
    return [hit for hit, _ in kept], [score for _, score in kept]


def _as_hit(row: CandidateRow, lender: Hit) -> Hit:
    return Hit(message_id=row.message_id, guild_id=row.guild_id, channel_id=row.channel_id, author_id=row.author_id,
               author_name=row.author_name, content=row.content, created_at=from_timestamp(row.created_at),
               score=lender.score, sources=("context",), rank=lender.rank)


def _beside(row: CandidateRow, lender: Hit) -> str:
    """The text the reranker reads for ``row``: it and its lender, in the order they were posted."""
    own = f"{row.author_name}: {row.content}"
    theirs = f"{lender.author_name}: {lender.content}"
    lender_first = (lender.created_at, lender.message_id) <= (from_timestamp(row.created_at), row.message_id)
    return f"{theirs}\n{own}" if lender_first else f"{own}\n{theirs}"
