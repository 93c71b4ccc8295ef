"""FirstStage: first-stage retrieval every store shares — each side's hits fused, widened to neighbours, ranked.

Dialect-free: a store's engine (store/sqlite/search.py, store/postgres/search.py) supplies the look-ups this module
names (``RecentMessage``, ``narrows``); the fusion is fusion.py's, the window and the neighbours context.py's, the
loans loans.py's, and the weights and budgets come from ``RankingTuning`` (runtime/ranking.py, measured in
docs/ranking.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np

from ..language import keywords as text
from ..language import questions
from ..language.coverage import model_scripts
from ..records import Boost, Hit, ScoreParts, SearchFilters, checked_limit
from ..store.rows import CandidateRow, from_timestamp
from ..vectors.embedding import Embedder
from ..runtime.ranking import RankingTuning
from .context import ChannelWindow, Neighbours, Window, addressed, lenders, neighbours_in
from .coordination import coordination
from .fusion import Fused, Hits, coordinated, fuse_sides
from .informative import NO_VOCABULARY, Vocabulary, scaled, vocabulary, worth
from .loans import Loans, spread_with_loans
from .named import GuildNames, Named, addressee, guild_names, named_boosts, plain_names, read_question
from .structure import NO_EXCHANGES, ChannelStructure, Exchanges, Posted, exchanges, measure, reply_lifts, strength
from .timed_cache import TimedCache

if TYPE_CHECKING:
    from ..runtime.profile import MemoryProfile

__all__ = ("ContextRead", "FirstStage", "Mode", "RecentMessage", "Searched", "narrows", "score_parts")

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "vector", "keyword"]


class ChannelReading(NamedTuple):
    """What the first stage reads of a channel's recent messages: its structure, its vocabulary, and each of those
    messages' worth against it (search/informative.py) with the hash of the text it was worked out from, so that a
    search weighs a recent message's terms once a reading, off the event loop, not each time (an edit since is
    weighed again)."""

    structure: ChannelStructure
    vocabulary: Vocabulary
    worth: Mapping[int, tuple[int, float]] = {}
    exchanges: Exchanges = NO_EXCHANGES


class RecentMessage(NamedTuple):
    """A channel's message as the structure look-up reads it (search/structure.py reads whether it asks)."""

    message_id: int
    author_id: int
    reply_to_id: int | None
    content: str


@dataclass(frozen=True)
class ContextRead:
    """The context a search read under its filters: the window of each of its strongest sources (by row id, read
    ``reply_window`` deep) and the rows that passed of those windows and of its candidates. The reranker's pool
    (search/pool.py) lends from it and reads the store only for what it does not hold."""

    window: Mapping[int, ChannelWindow]
    rows: Mapping[int, CandidateRow]
    reply_window: int


@dataclass(frozen=True)
class Searched:
    """A first-stage search: its hits, best first, and the context it read on the way."""

    hits: tuple[Hit, ...]
    context: ContextRead


def narrows(filters: SearchFilters) -> bool:
    """Whether ``filters`` may leave out part of a guild (a vector search over the whole guild may then miss)."""
    return any(value is not None for value in (
        filters.channel_ids, filters.author_ids, filters.after, filters.before, filters.allowed_channel_ids))


def score_parts(fused: Fused, loans: Mapping[int, Loans], rowid: int, tail: bool = False,
                boosts: tuple[Boost, ...] = (), informative: Mapping[int, float] | None = None,
                said_little: float = 0.0) -> ScoreParts:
    """What ``rowid``'s score is made of: its fused sides (``floor`` for a message no side returned), its loans, its
    ``boosts`` (search/named.py) and its informativeness (what share of a loan it may borrow, and of its own score
    above ``floor`` it keeps: ``said_little`` is what it lost); for a message that only fills the ``tail``, nothing
    its score is made of."""
    if tail:
        return ScoreParts(keyword=None, vector=None, vector_weight=0.0, keyword_weight=0.0, tail=True)
    found = {side.name: side.scores[rowid] for side in fused.sides if rowid in side.scores}
    weights = {side.name: side.weight for side in fused.sides}
    missing = sum(side.weight * side.floor for side in fused.sides if rowid not in side.scores)
    neighbour, question, reply = loans.get(rowid, Loans())
    return ScoreParts(keyword=found.get("keyword"), vector=found.get("vector"),
                      vector_weight=weights.get("vector", 0.0), keyword_weight=weights.get("keyword", 0.0),
                      missing=missing, neighbour_loan=neighbour, question_loan=question, reply_loan=reply,
                      boosts=boosts, informativeness=(informative or {}).get(rowid, 1.0), said_little=said_little)


def _candidate(row: CandidateRow, score: float, sources: list[str], rank: int, parts: ScoreParts) -> Hit:
    """A candidate row as a search result."""
    return Hit(message_id=row.message_id, guild_id=row.guild_id, channel_id=row.channel_id,
               author_id=row.author_id, author_name=row.author_name, content=row.content,
               created_at=from_timestamp(row.created_at), score=score, sources=tuple(sources), rank=rank, parts=parts)


class FirstStage:
    """The first stage every store shares: each side's hits under the filters, fused by standardised scores,
    widened to channel neighbours, then the passing rows ranked. A store supplies the three look-ups."""

    def __init__(self, embedder: Embedder, profile: MemoryProfile) -> None:
        self._embedder = embedder
        self.vector_candidates: int = profile.vector_candidates
        self.keyword_candidates: int = profile.keyword_candidates
        self.scripts = model_scripts(profile.embedding_model, profile.embedding_scripts)
        self.tuning: RankingTuning = profile.ranking
        # Each (guild, channel)'s structure and vocabulary, measured again after the tuning's structure_refresh_s
        # (read per look-up: a tuning swapped at run time applies at once); concurrent look-ups of a channel share
        # one read.
        self._structures: TimedCache[tuple[int, int], ChannelReading] = TimedCache(
            lambda: self.tuning.structure_refresh_s)
        # Each guild's member and channel names, which questions are read against (search/named.py).
        self._names: TimedCache[int, GuildNames] = TimedCache(lambda: self.tuning.names_refresh_s)

    async def search(self, query: str, filters: SearchFilters, limit: int, mode: Mode = "hybrid",
                     asked_at: datetime | None = None) -> list[Hit]:
        """The best ``limit`` messages for ``query`` that pass ``filters``, best first; the people, channels and
        times it names (read as of ``asked_at``, now by default) boost what answers them (search/named.py)."""
        return list((await self.searched(query, filters, limit, mode, asked_at)).hits)

    async def searched(self, query: str, filters: SearchFilters, limit: int, mode: Mode = "hybrid",
                       asked_at: datetime | None = None) -> Searched:
        """``search``'s hits, with the context it read for them (what the reranker's pool lends from)."""
        checked_limit(limit)
        if not query.strip():
            return Searched((), ContextRead({}, {}, self.tuning.reply_window))
        tuning = self.tuning
        named = await self._named(query, filters.guild_id, asked_at or datetime.now(UTC))
        query = named.query
        want_vector, want_keyword = mode in ("hybrid", "vector"), mode in ("hybrid", "keyword")
        keyword_asked = max(self.keyword_candidates, limit)
        vector, keyword = await asyncio.gather(
            self._vector_hits(query, filters, max(self.vector_candidates, limit)) if want_vector else _none(),
            self._keyword_hits(query, filters, keyword_asked, named.addressee) if want_keyword else _none(),
        )
        fused = fuse_sides(query, self.scripts, vector, keyword, tuning, keyword_asked)
        if not fused.scores:
            return Searched((), ContextRead({}, {}, tuning.reply_window))
        strongest = sorted(fused.scores, key=fused.scores.__getitem__, reverse=True)[:tuning.context_sources]
        window, rows = await self._context_and_rows(strongest, [*fused.scores, *fused.tail], filters)
        neighbours = neighbours_in(window, rows, tuning.reply_window, tuning.replies_lent)
        heard = {*neighbours, *(neighbour.following for neighbour in neighbours.values())}
        asking = {rowid for rowid in heard if rowid in rows and questions.asks(rows[rowid].content)}
        # A question's Discord replies it may lend to (neighbours_in): told apart from the answers it guessed.
        replied = {rowid: surroundings.replies[:tuning.replies_lent] for rowid, surroundings in window.items()}
        channels = lenders(neighbours, rows)
        readings = await self._readings_of(channels, filters.guild_id)
        dialogue, guessed = self._dialogue(channels, readings)
        informative = self._informative(neighbours, rows, readings, fused.scores if tuning.informative_own else ())
        own = fused.scores if informative is None or not tuning.informative_own else damped(
            fused.scores, fused.floor, informative)
        scores, loans = spread_with_loans(own, neighbours, fused.floor,
                                          (tuning.context_weight, tuning.next_context_weight), asking,
                                          tuning.answer_context_weight, replied, dialogue,
                                          informative, guessed,
                                          None if dialogue is None else addressed(
                                              neighbours, rows, {channel: reading.exchanges
                                                                 for channel, reading in readings.items()}),
                                          tuning.reply_lift, _unmatched(fused, {reply for replies in replied.values()
                                                                                for reply in replies}))
        # A keyword hit ranks by the share of the question it holds; what it lent was worked out from its whole
        # match above (a question that repeats one word of the query still says what the exchange is about).
        matched, fused = fused, self._coordinated(fused, query, keyword, rows, readings)
        for rowid, score in matched.scores.items():
            scores[rowid] += fused.scores[rowid] - score
        boosts = await self._said_boosts(named_boosts(named, rows, scores, tuning.named_boost), rows, readings,
                                         informative, filters.guild_id)
        for rowid, given in boosts.items():
            scores[rowid] += sum(boost.amount for boost in given)
        # Equal scores (a name that alone matches its author's messages, say) put the latest first, as the keyword
        # side orders them.
        ranked = sorted((rowid for rowid in scores if rowid in rows),
                        key=lambda rowid: (-scores[rowid], -rows[rowid].created_at, -rowid))
        filling: set[int] = set()
        if len(ranked) < limit and fused.tail:
            # Below everything ranked, each a step lower than the one before (a candidate's score orders it).
            low = min((scores[rowid] for rowid in ranked), default=fused.floor) - 1.0
            tail = [rowid for rowid in fused.tail if rowid not in scores and rowid in rows]
            scores.update((rowid, low - step) for step, rowid in enumerate(tail))
            fused.sources.update((rowid, ["vector"]) for rowid in tail)
            ranked += tail
            filling.update(tail)
        hits = tuple(_candidate(rows[rowid], scores[rowid], fused.sources.get(rowid, ["context"]), rank,
                                score_parts(fused, loans, rowid, rowid in filling, boosts.get(rowid, ()), informative,
                                            own.get(rowid, 0.0) - matched.scores.get(rowid, 0.0)))
                     for rank, rowid in enumerate(ranked[:limit], start=1))
        return Searched(hits, ContextRead(window, rows, tuning.reply_window))

    async def _named(self, query: str, guild_id: int, asked_at: datetime) -> Named:
        """What ``query`` names in its guild (search/named.py): the guild's names are read at most every
        ``names_refresh_s``; the plain names it holds are asked of the store whether they read as persons. With no
        ``named_boost``, only the name it is put to is read (``read_address``); with neither, nothing."""
        tuning = self.tuning
        if tuning.named_boost <= 0.0 and not tuning.read_address:  # switched off: the question is searched as written
            return Named({}, {}, (), query)
        names = await self._names.get(guild_id, lambda: self._read_guild_names(guild_id))
        if tuning.named_boost <= 0.0:
            return Named({}, {}, (), query, addressee(query, names))
        plain = plain_names(query, names)
        people = await self._people(guild_id, sorted(plain)) if plain else set()
        return read_question(query, names, asked_at, people, tuning.read_address)

    async def _read_guild_names(self, guild_id: int) -> GuildNames:
        members, channels = await self._guild_names(guild_id)
        return await asyncio.to_thread(guild_names, members, channels)

    async def _readings_of(self, channels: Mapping[int, int], guild_id: int) -> dict[int, ChannelReading]:
        """Each lender's channel's reading (``channels``: each lender's channel id), measured on the channel's last
        ``structure_messages`` messages and kept ``structure_refresh_s`` seconds; none when the tuning reads neither
        the structure nor informativeness."""
        if not self.tuning.read_structure and self.tuning.informative_full_at <= 0.0:
            return {}
        ids = sorted(set(channels.values()))
        # Kept readings are read in place: gathering them too cost a task each, ~3 ms a search over 50 channels
        # (docs/scale.md). The rest are read together: after a refresh, a search over many channels waits for one
        # read, not one after another.
        readings = {channel: self._structures.fresh((guild_id, channel)) for channel in ids}
        missing = [channel for channel, reading in readings.items() if reading is None]
        if missing:
            read = await asyncio.gather(*(self._channel_reading(guild_id, channel) for channel in missing))
            readings.update(zip(missing, read))
        return {channel: reading for channel, reading in readings.items() if reading is not None}

    def _coordinated(self, fused: Fused, query: str, keyword: Hits, rows: Mapping[int, CandidateRow],
                     readings: Mapping[int, ChannelReading]) -> Fused:
        """``fused`` with each keyword hit weighed by the share of ``query`` it holds against its channel's
        vocabulary (search/coordination.py, fusion.coordinated); ``fused`` itself where the rule is off or only
        one side was fused."""
        power = self.tuning.keyword_coordination
        if power <= 0.0 or len(fused.sides) < 2:
            return fused
        contents = {rowid: (rows[rowid].content, rows[rowid].author_name, rows[rowid].channel_id)
                    for rowid, _ in keyword if rowid in rows}
        shares = coordination(query, contents, contents,
                              {channel: reading.vocabulary for channel, reading in readings.items()})
        return coordinated(fused, shares, power)

    async def _said_boosts(self, boosts: dict[int, tuple[Boost, ...]], rows: Mapping[int, CandidateRow],
                           readings: Mapping[int, ChannelReading], informative: Mapping[int, float] | None,
                           guild_id: int) -> dict[int, tuple[Boost, ...]]:
        """``boosts`` (search/named.py), each scaled by its message's informativeness against its channel's reading
        (a boosted message's channel no lender read is read here): "lol" by the member the question names says
        nothing of what was asked. As they are where the tuning switches the rule off."""
        if not boosts or informative is None:
            return boosts
        missing = {rowid: rows[rowid].channel_id for rowid in boosts if rows[rowid].channel_id not in readings}
        read = {**readings, **(await self._readings_of(missing, guild_id) if missing else {})}
        said = {**self._informativeness((rowid for rowid in boosts if rowid not in informative), rows, read),
                **informative}
        return {rowid: kept for rowid, given in boosts.items()
                if (kept := tuple(Boost(boost.reason, boost.amount * said[rowid]) for boost in given
                                  if boost.amount * said[rowid] > 0.0))}

    def _dialogue(self, channels: Mapping[int, int], readings: Mapping[int, ChannelReading]
                  ) -> tuple[dict[int, float] | None, dict[int, float] | None]:
        """What share of their weight each lender's rules keep, to its neighbours and to the answers it guesses: its
        channel's dialogue through ``structure.strength``, or with ``reply_calibration`` what the channel's Discord
        replies say each is worth (``structure.reply_lifts``) where that is more; None, None (every channel a
        dialogue) when the tuning reads no structure."""
        tuning = self.tuning
        if not tuning.read_structure:
            return None, None
        neighbour: dict[int, float] = {}
        answer: dict[int, float] = {}
        for channel, reading in readings.items():
            kept = strength(reading.structure.dialogue, tuning.dialogue_full_at)
            lifts = reply_lifts(reading.structure) if tuning.reply_calibration else None
            neighbour[channel], answer[channel] = (kept, kept) if lifts is None else (max(kept, lifts[0]),
                                                                                     max(kept, lifts[1]))
        return ({rowid: neighbour[channel] for rowid, channel in channels.items() if channel in neighbour},
                {rowid: answer[channel] for rowid, channel in channels.items() if channel in answer})

    def _informative(self, neighbours: Neighbours, rows: Mapping[int, CandidateRow],
                     readings: Mapping[int, ChannelReading],
                     candidates: Iterable[int] = ()) -> dict[int, float] | None:
        """The informativeness (search/informative.py) of every row that may lend or borrow, and of
        ``candidates``, against its channel's vocabulary; None when the tuning switches the rule off."""
        tuning = self.tuning
        if tuning.informative_full_at <= 0.0:
            return None
        involved = {other for rowid, (previous, following, answers, later) in neighbours.items()
                    for other in (rowid, previous, following, *answers, *later) if other is not None}
        involved.update(candidates)
        return self._informativeness(involved, rows, readings)

    def _informativeness(self, rowids: Iterable[int], rows: Mapping[int, CandidateRow],
                         readings: Mapping[int, ChannelReading]) -> dict[int, float]:
        """The informativeness of each of ``rowids`` among ``rows``, against its channel's reading."""
        tuning = self.tuning
        return {rowid: scaled(_worth(rows[rowid], readings.get(rows[rowid].channel_id)), tuning.informative_from,
                              tuning.informative_full_at)
                for rowid in rowids if rowid in rows}

    async def channel_structure(self, guild_id: int, channel_id: int) -> ChannelStructure:
        """A channel's structure (search/structure.py) as of at most ``structure_refresh_s`` seconds ago: its last
        ``structure_messages`` messages read by the store, measured off the event loop; searches that miss together
        share one read."""
        return (await self._channel_reading(guild_id, channel_id)).structure

    async def _channel_reading(self, guild_id: int, channel_id: int) -> ChannelReading:
        return await self._structures.get((guild_id, channel_id), lambda: self._measure_channel(guild_id, channel_id))

    async def _measure_channel(self, guild_id: int, channel_id: int) -> ChannelReading:
        recent = await self._recent_in_channel(guild_id, channel_id, self.tuning.structure_messages)
        return await asyncio.to_thread(_measure_recent, recent, self.tuning.reply_window)

    async def _embed_query(self, query: str) -> np.ndarray:
        """The query's vector as a one-row matrix, read as every store's vector side reads it."""
        return await self._embedder.embed_queries([text.embedding_query(query)])

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        """The ``k`` nearest messages that pass ``filters``, as (row id, inner product), best first."""
        raise NotImplementedError

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int, addressee: str = "") -> Hits:
        """The ``k`` best keyword matches that pass ``filters``, as (row id, higher-is-better score). The words of
        ``addressee`` (the name the question is put to, search/named.py) match as any word, without the score a name
        adds to its author's messages."""
        raise NotImplementedError

    async def _context_and_rows(self, sources: list[int], candidates: list[int],
                                filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]:
        """The channel neighbours of ``sources``, and the rows of the candidates and those neighbours that pass."""
        raise NotImplementedError

    async def _recent_in_channel(self, guild_id: int, channel_id: int, limit: int) -> list[RecentMessage]:
        """The last ``limit`` messages of a channel, oldest first, as the structure reads them."""
        raise NotImplementedError

    async def _guild_names(self, guild_id: int) -> tuple[dict[int, str], dict[int, str]]:
        """One guild's members (author id → their latest stored display name) and channels (id → stored name)."""
        raise NotImplementedError

    async def _people(self, guild_id: int, names: list[str]) -> set[str]:
        """Which of ``names`` read as persons: the store finds each at least as often as an author's name as in
        messages (the keyword side's rule)."""
        raise NotImplementedError


def _unmatched(fused: Fused, rows: Iterable[int]) -> dict[int, float]:
    """What each of ``rows`` (the Discord replies a question may lend to: the only rows the loans read it for) the
    keyword side of a hybrid search did not return scores under the mean for it (its weight times its floor, as a
    positive amount); none outside a hybrid search."""
    keyword = next((side for side in fused.sides if side.name == "keyword"), None)
    if keyword is None or len(fused.sides) < 2 or keyword.floor >= 0.0:
        return {}
    return {rowid: -keyword.weight * keyword.floor for rowid in rows if rowid not in keyword.scores}


def damped(scores: Mapping[int, float], floor: float, informative: Mapping[int, float]) -> dict[int, float]:
    """``scores`` with what each message scores above ``floor`` (a message no side returned) scaled by its
    informativeness: a message that says nothing of its own ranks with what matched nothing."""
    return {rowid: score if score <= floor else floor + (score - floor) * informative.get(rowid, 1.0)
            for rowid, score in scores.items()}


def _measure_recent(recent: Sequence[RecentMessage], window: int) -> ChannelReading:
    known = vocabulary(message.content for message in recent)
    posted = [Posted(message.message_id, message.author_id, message.reply_to_id, questions.asks(message.content))
              for message in recent]
    return ChannelReading(measure([posted], window), known,
                          {message.message_id: (hash(message.content), worth(message.content, known))
                           for message in recent},
                          exchanges(posted))


def _worth(row: CandidateRow, reading: ChannelReading | None) -> float:
    """A row's worth against its channel's vocabulary: the one its reading worked out, unless the text changed."""
    if reading is None:
        return worth(row.content, NO_VOCABULARY)
    kept = reading.worth.get(row.message_id)
    if kept is not None and kept[0] == hash(row.content):
        return kept[1]
    return worth(row.content, reading.vocabulary)


async def _none() -> Hits:
    return []
