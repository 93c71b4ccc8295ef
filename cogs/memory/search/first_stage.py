"""FirstStage: first-stage retrieval every store shares — each side's hits fused, widened to neighbours, ranked.

Dialect-free: a store's engine (store/sqlite/search.py, store/postgres/search.py) supplies the three look-ups; the
weights and budgets come from ``RankingTuning`` (runtime/ranking.py, measured in docs/ranking.md).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from ..language import keywords as text
from ..language import questions
from ..language.coverage import covered_share, model_scripts
from ..records import Hit, ScoreParts, SearchFilters, checked_limit
from ..store.rows import CandidateRow
from ..vectors.embedding import Embedder
from ..runtime.ranking import RankingTuning
from .structure import ChannelStructure, Posted, measure, strength
from .timed_cache import TimedCache

if TYPE_CHECKING:
    from ..runtime.profile import MemoryProfile

__all__ = ("ChannelWindow", "FirstStage", "Fused", "Hits", "Loans", "Mode", "Neighbour", "Neighbours",
           "RecentMessage", "Side", "Spread", "Window", "bm25_idf", "characters_alone", "fuse", "fuse_sides", "lenders",
           "narrows", "neighbours_in", "rows_wanted", "score_parts", "spread_to_neighbours", "spread_with_loans",
           "window_of", "within_budget")

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "vector", "keyword"]
Hits = list[tuple[int, float]]


class ChannelWindow(NamedTuple):
    """A source's surroundings in its channel, as a store reads them: its previous message, the messages after it
    (nearest first, ``reply_window + 1`` at most) and its Discord replies (earliest first, ``reply_window`` at most),
    each as a row id."""

    previous: int | None
    after: tuple[int, ...]
    replies: tuple[int, ...]


class Neighbour(NamedTuple):
    """A source's previous and next message, what may answer it, and what may answer its next message, were they
    questions (questions.answers; for the source, its replies too)."""

    previous: int | None
    following: int | None
    answers: tuple[int, ...]
    following_answers: tuple[int, ...]


class RecentMessage(NamedTuple):
    """A channel's message as the structure look-up reads it (search/structure.py reads whether it asks)."""

    message_id: int
    author_id: int
    reply_to_id: int | None
    content: str


Window = dict[int, ChannelWindow]
Neighbours = dict[int, Neighbour]
DEFAULT_TUNING = RankingTuning()


def _standardise(hits: Hits, asked: int | None = None) -> tuple[dict[int, float], float]:
    """Z-scores of one retriever's scores for this query, and the score of a message it did not return.

    A side cut at what it was ``asked`` for (or asked for nothing in particular) may have more matches below its
    weakest hit: a missing message scores that weakest hit's z-score, ranked below everything the side kept. A side
    that returned fewer than it was asked for returned everything that matches (the keyword side: every message
    holding a deciding term), so a missing message matches nothing and scores 0: the hits are standardised among the
    ``asked`` candidates, the ones it fell short of scoring 0, and the floor is the z-score of 0. A handful of matches
    then stands out from the messages that match nothing, as a handful among a full list would, rather than being
    spread over the whole scale among themselves. A lone or tied list carries no spread, so its hits count as
    uniformly strong (1.0) over a floor of 0.
    """
    if not hits:
        return {}, 0.0
    scores = np.fromiter((score for _, score in hits), dtype=np.float64, count=len(hits))
    short = 0 if asked is None else max(asked - len(hits), 0)
    population = np.concatenate([scores, np.zeros(short)]) if short else scores
    spread = float(population.std())
    if len(population) < 2 or spread < 1e-9:
        return {rowid: 1.0 for rowid, _ in hits}, 0.0
    mean = float(population.mean())
    standard = {rowid: (score - mean) / spread for rowid, score in hits}
    return standard, (-mean / spread if short else min(standard.values()))


class Side(NamedTuple):
    """One retriever's part in a fusion: its weight, its standardised scores and the score of what it missed."""

    name: str  # "vector" or "keyword"
    weight: float
    scores: dict[int, float]
    floor: float


def _fusion(vector: Hits, keyword: Hits, vector_weight: float,
            keyword_asked: int | None = None) -> tuple[dict[int, float], float, tuple[Side, ...]]:
    sides = tuple(Side(name, weight, *_standardise(hits, asked)) for name, weight, hits, asked in (
        ("vector", vector_weight, vector, None), ("keyword", 1.0 - vector_weight, keyword, keyword_asked)) if hits)
    rowids = set().union(*(side.scores.keys() for side in sides))
    fused = {rowid: sum(weight * scores.get(rowid, floor) for _, weight, scores, floor in sides) for rowid in rowids}
    return fused, sum(weight * floor for _, weight, _, floor in sides), sides


def fuse(vector: Hits, keyword: Hits, vector_weight: float = DEFAULT_TUNING.vector_weight,
         keyword_asked: int | None = None) -> tuple[dict[int, float], float]:
    """Convex combination of the two standardised score lists, and the fused score of a message neither returned;
    ``keyword_asked``: how many hits the keyword side was asked for (``_standardise``).

    A side with no hits contributes nothing, so the other side's order stands.
    """
    fused, floor, _ = _fusion(vector, keyword, vector_weight, keyword_asked)
    return fused, floor


@dataclass(frozen=True, slots=True)
class Fused:
    """One query's fused scores, the score of a message neither side returned, which side found each, the hits
    ranked after every scored message (``tail``, best first), and the sides fused (what ``score_parts`` reads)."""

    scores: dict[int, float]
    floor: float
    sources: dict[int, list[str]]
    tail: list[int] = field(default_factory=list)
    sides: tuple[Side, ...] = ()


def fuse_sides(query: str, scripts: str, vector: Hits, keyword: Hits,
               tuning: RankingTuning = DEFAULT_TUNING, keyword_asked: int | None = None) -> Fused:
    """``fuse`` for a hybrid search, the vector side weighted by the share of ``query`` the model reads (``scripts``).

    When the model reads no more than ``tuning.min_covered_share`` of the query's words and the keyword side found
    something, the vector side's nearest messages are noise at the top: they are left out of the fusion and only
    fill the list after everything the keyword side ranked (and its spread to neighbours), in their own order, so a
    list is never cut short while a side still has candidates for the reranker. A single side (one mode, or one side
    empty) keeps its own order.
    """
    weight, tail = tuning.vector_weight, []
    if vector and keyword:
        share = covered_share(query, scripts)
        if share <= tuning.min_covered_share:
            tail, vector = [rowid for rowid, _ in vector], []
        else:
            weight *= share
    scores, floor, sides = _fusion(vector, keyword, weight, keyword_asked)
    sources: dict[int, list[str]] = {rowid: ["vector"] for rowid, _ in vector}
    for rowid, _ in keyword:
        sources.setdefault(rowid, []).append("keyword")
    return Fused(scores, floor, sources, [rowid for rowid in tail if rowid not in scores], sides)


class Loans(NamedTuple):
    """What a message received from the messages around it, by kind (ScoreParts' loans)."""

    neighbour: float = 0.0
    question: float = 0.0
    reply: float = 0.0


class Spread(NamedTuple):
    """The scores after ``spread_with_loans``, and what each message that received something received."""

    scores: dict[int, float]
    loans: dict[int, Loans]


def spread_to_neighbours(scores: dict[int, float], neighbours: Neighbours, floor: float,
                         weights: tuple[float, float] = (DEFAULT_TUNING.context_weight,
                                                         DEFAULT_TUNING.next_context_weight),
                         asking: Collection[int] = (),
                         answer_weight: float = DEFAULT_TUNING.answer_context_weight) -> dict[int, float]:
    """Each source's positive score, times ``weights`` (previous, next), added to its previous and next message in
    the channel; a source in ``asking`` (a question) lends ``answer_weight`` of it to its reply instead.

    A question that is the next message of a source lends on too: what its own score and that source's loan come
    to, times ``answer_weight``, goes to its reply (a source that asks adds the loan it got the same way, and so
    does a next message that answers a question with a question). A neighbour that was not a candidate starts
    from ``floor``, the score of a message no side returned.
    """
    return spread_with_loans(scores, neighbours, floor, weights, asking, answer_weight).scores


def spread_with_loans(scores: dict[int, float], neighbours: Neighbours, floor: float,
                      weights: tuple[float, float] = (DEFAULT_TUNING.context_weight,
                                                      DEFAULT_TUNING.next_context_weight),
                      asking: Collection[int] = (),
                      answer_weight: float = DEFAULT_TUNING.answer_context_weight,
                      replied: Mapping[int, Collection[int]] | None = None,
                      dialogue: Mapping[int, float] | None = None) -> Spread:
    """``spread_to_neighbours``, and each loan by kind beside it: a question's loan to a message that replies to it
    on Discord (``replied``: a question's Discord replies) is a reply loan, to another answer a question loan.

    ``dialogue`` is the share of its weight each lender keeps by its channel's dialogue (search/structure.py,
    ``strength``; 1.0 for one it does not name): what a message lends by the order of messages (to its neighbours,
    a question to the answer it guesses) is scaled by it, since adjacent messages are one exchange only where
    authors take turns more than chance; a Discord reply says what it answers, so a question's loan to its replies
    is not.
    """
    spread, received, replies = dict(scores), {}, {}
    lent: dict[int, list[float]] = {}
    on_discord = replied or {}

    def lend(target: int, amount: float, kind: int) -> None:
        spread[target] = spread.get(target, floor) + amount
        lent.setdefault(target, [0.0, 0.0, 0.0])[kind] += amount

    def strength(lender: int, target: int) -> float:
        if dialogue is None or target in on_discord.get(lender, ()):
            return 1.0
        return dialogue.get(lender, 1.0)

    for rowid, (previous, following, answers, following_answers) in neighbours.items():
        score = max(scores[rowid], 0.0)
        back = 0.0 if previous is None else weights[0] * score * strength(rowid, previous)
        if back > 0.0:
            lend(previous, back, 0)
        if rowid in asking:  # a question's loan is added below, with what it got itself
            replies[rowid] = answers
            for reply in answers:
                received[reply] = received.get(reply, 0.0) + answer_weight * score * strength(rowid, reply)
        elif following is not None:
            loan = weights[1] * score * strength(rowid, following)
            received[following] = received.get(following, 0.0) + loan
            if loan > 0.0:
                lend(following, loan, 0)
        if following in asking and following not in neighbours:
            replies[following] = following_answers
    for question, answers in replies.items():
        loan = answer_weight * max(scores.get(question, floor) + received.get(question, 0.0), 0.0)
        if loan > 0.0:
            for reply in answers:
                if (kept := loan * strength(question, reply)) > 0.0:
                    lend(reply, kept, 2 if reply in on_discord.get(question, ()) else 1)
    return Spread(spread, {rowid: Loans(*amounts) for rowid, amounts in lent.items()})


def score_parts(fused: Fused, loans: Mapping[int, Loans], rowid: int, tail: bool = False) -> ScoreParts:
    """What ``rowid``'s score is made of: its fused sides (``floor`` for a message no side returned) and its loans;
    for a message that only fills the ``tail``, nothing its score is made of."""
    if tail:
        return ScoreParts(keyword=None, vector=None, vector_weight=0.0, keyword_weight=0.0, tail=True)
    found = {side.name: side.scores[rowid] for side in fused.sides if rowid in side.scores}
    weights = {side.name: side.weight for side in fused.sides}
    missing = sum(side.weight * side.floor for side in fused.sides if rowid not in side.scores)
    neighbour, question, reply = loans.get(rowid, Loans())
    return ScoreParts(keyword=found.get("keyword"), vector=found.get("vector"),
                      vector_weight=weights.get("vector", 0.0), keyword_weight=weights.get("keyword", 0.0),
                      missing=missing, neighbour_loan=neighbour, question_loan=question, reply_loan=reply)


def neighbours_in(window: Window, rows: dict[int, CandidateRow], reply_window: int = DEFAULT_TUNING.reply_window,
                  replies_lent: int = DEFAULT_TUNING.replies_lent) -> Neighbours:
    """Each source's previous and next message from ``window``, and what may answer it and its next message, were
    they questions: among the next ``reply_window`` messages that pass (``rows``), by questions.answers, and for the
    source, its first ``replies_lent`` replies (Discord's reply) that pass too."""

    def author(rowid: int | None) -> Any:
        return rows[rowid].author_id if rowid in rows else None

    def answers(question: int, asked: int | None, after: tuple[int, ...]) -> tuple[int, ...]:
        passing = [(rowid, author(rowid)) for rowid in after[:reply_window] if rowid in rows]
        return questions.answers(author(question), author(asked), passing)

    neighbours: Neighbours = {}
    for rowid, (previous, after, replies) in window.items():
        following = after[0] if after else None
        guessed = answers(rowid, previous, after)
        replied = tuple(reply for reply in replies[:replies_lent] if reply in rows and reply not in guessed)
        neighbours[rowid] = Neighbour(previous, following, guessed + replied,
                                      () if following is None else answers(following, rowid, after[1:]))
    return neighbours


def narrows(filters: SearchFilters) -> bool:
    """Whether ``filters`` may leave out part of a guild (a vector search over the whole guild may then miss)."""
    return any(value is not None for value in (
        filters.channel_ids, filters.author_ids, filters.after, filters.before, filters.allowed_channel_ids))


def characters_alone(counts: dict[str, int]) -> list[str]:
    """The characters to search alone (text.characters) of the Han bigrams no message holds, unless a bigram that
    is found already holds them: a found word is not counted again through its characters."""
    found = "".join(term for term, count in counts.items() if count > 0)
    alone: list[str] = []
    for term, count in counts.items():
        if count == 0:
            alone.extend(c for c in text.characters(term) if c not in found and c not in counts and c not in alone)
    return alone


def bm25_idf(rows: int, matching: int) -> float:
    """A term's IDF as FTS5's bm25() works it out, over ``rows`` documents of which ``matching`` hold the term: kept
    just above zero for a term in half the rows or more. Both stores score with it."""
    return max(math.log((rows - matching + 0.5) / (matching + 0.5)), 1e-6)


def within_budget(counts: dict[str, int], budget: int = DEFAULT_TUNING.keyword_max_postings) -> list[str]:
    """The terms that decide which rows match, in query order: rarest first while their summed counts (each counted
    to just above ``budget``) fit it. The others only rank the rows these match."""
    kept = set()
    for term in sorted(counts, key=counts.__getitem__):
        if counts[term] <= budget:
            budget -= counts[term]
            kept.add(term)
    return [term for term in counts if term in kept]


def window_of(rows: Iterable[Sequence[Any]], reply_window: int = DEFAULT_TUNING.reply_window) -> Window:
    """A store's neighbour rows (store/neighbours.py) as a Window: the messages after a source stop where its
    channel does, its replies where they do."""
    replies_at = 2 + reply_window + 1  # a row: the source, its previous, reply_window + 1 after it, its replies

    def present(ids: Sequence[Any]) -> tuple[int, ...]:
        return tuple(rowid for rowid in ids if rowid is not None)

    return {row[0]: ChannelWindow(row[1], present(row[2:replies_at]), present(row[replies_at:])) for row in rows}


def rows_wanted(candidates: list[int], window: Window) -> list[int]:
    """The row ids to read for a search: its candidates and every message in their sources' window, in order."""
    around = ((previous, *after, *replies) for previous, after, replies in window.values())
    return sorted(set(candidates).union(*around) - {None})


def _candidate(row: CandidateRow, score: float, sources: list[str], rank: int, parts: ScoreParts) -> Hit:
    """A candidate row as a search result."""
    return Hit(message_id=row.message_id, guild_id=row.guild_id, channel_id=row.channel_id,
               author_id=row.author_id, author_name=row.author_name, content=row.content,
               created_at=row.created_at, score=score, sources=tuple(sources), rank=rank, parts=parts)


class FirstStage:
    """The first stage every store shares: each side's hits under the filters, fused by standardised scores,
    widened to channel neighbours, then the passing rows ranked. A store supplies the three look-ups."""

    def __init__(self, embedder: Embedder, profile: MemoryProfile) -> None:
        self._embedder = embedder
        self.vector_candidates: int = profile.vector_candidates
        self.keyword_candidates: int = profile.keyword_candidates
        self.scripts = model_scripts(profile.embedding_model, profile.embedding_scripts)
        self.tuning: RankingTuning = profile.ranking
        # Each (guild, channel)'s structure, measured again after the tuning's structure_refresh_s (read per look-up:
        # a tuning swapped at run time applies at once); concurrent look-ups of a channel share one read.
        self._structures: TimedCache[tuple[int, int], ChannelStructure] = TimedCache(
            lambda: self.tuning.structure_refresh_s)

    async def search(self, query: str, filters: SearchFilters, limit: int, mode: Mode = "hybrid") -> list[Hit]:
        """The best ``limit`` messages for ``query`` that pass ``filters``, best first."""
        checked_limit(limit)
        if not query.strip():
            return []
        tuning = self.tuning
        want_vector, want_keyword = mode in ("hybrid", "vector"), mode in ("hybrid", "keyword")
        keyword_asked = max(self.keyword_candidates, limit)
        vector, keyword = await asyncio.gather(
            self._vector_hits(query, filters, max(self.vector_candidates, limit)) if want_vector else _none(),
            self._keyword_hits(query, filters, keyword_asked) if want_keyword else _none(),
        )
        fused = fuse_sides(query, self.scripts, vector, keyword, tuning, keyword_asked)
        if not fused.scores:
            return []
        strongest = sorted(fused.scores, key=fused.scores.__getitem__, reverse=True)[:tuning.context_sources]
        window, rows = await self._context_and_rows(strongest, [*fused.scores, *fused.tail], filters)
        neighbours = neighbours_in(window, rows, tuning.reply_window, tuning.replies_lent)
        heard = {*neighbours, *(neighbour.following for neighbour in neighbours.values())}
        asking = {rowid for rowid in heard if rowid in rows and questions.asks(rows[rowid].content)}
        # A question's Discord replies it may lend to (neighbours_in): told apart from the answers it guessed.
        replied = {rowid: surroundings.replies[:tuning.replies_lent] for rowid, surroundings in window.items()}
        dialogue = await self._dialogue_of(lenders(neighbours, rows), filters.guild_id)
        scores, loans = spread_with_loans(fused.scores, neighbours, fused.floor,
                                          (tuning.context_weight, tuning.next_context_weight), asking,
                                          tuning.answer_context_weight, replied, dialogue)
        # Equal scores (a name that alone matches its author's messages, say) put the latest first, as the keyword
        # side orders them.
        ranked = sorted((rowid for rowid in scores if rowid in rows),
                        key=lambda rowid: (-scores[rowid], -rows[rowid].created_at.timestamp(), -rowid))
        filling: set[int] = set()
        if len(ranked) < limit and fused.tail:
            # Below everything ranked, each a step lower than the one before (a candidate's score orders it).
            low = min((scores[rowid] for rowid in ranked), default=fused.floor) - 1.0
            tail = [rowid for rowid in fused.tail if rowid not in scores and rowid in rows]
            scores.update((rowid, low - step) for step, rowid in enumerate(tail))
            fused.sources.update((rowid, ["vector"]) for rowid in tail)
            ranked += tail
            filling.update(tail)
        return [_candidate(rows[rowid], scores[rowid], fused.sources.get(rowid, ["context"]), rank,
                           score_parts(fused, loans, rowid, rowid in filling))
                for rank, rowid in enumerate(ranked[:limit], start=1)]

    async def _dialogue_of(self, channels: Mapping[int, int], guild_id: int) -> dict[int, float] | None:
        """What share of their weight each lender's rules keep (``channels``: each lender's channel id): its
        channel's dialogue, measured on the channel's last ``structure_messages`` messages and kept
        ``structure_refresh_s`` seconds, through ``structure.strength``; None (every channel a dialogue) when the
        tuning reads no structure."""
        if not self.tuning.read_structure:
            return None
        full_at = self.tuning.dialogue_full_at
        ids = sorted(set(channels.values()))
        # Kept structures are read in place: gathering them too cost a task each, ~3 ms a search over 50 channels
        # (docs/scale.md). The rest are read together: after a refresh, a search over many channels waits for one
        # read, not one after another.
        structures = {channel: self._structures.fresh((guild_id, channel)) for channel in ids}
        missing = [channel for channel, structure in structures.items() if structure is None]
        if missing:
            read = await asyncio.gather(*(self.channel_structure(guild_id, channel) for channel in missing))
            structures.update(zip(missing, read))
        kept = {channel: strength(structure.dialogue, full_at) for channel, structure in structures.items()
                if structure is not None}
        return {rowid: kept[channel] for rowid, channel in channels.items()}

    async def channel_structure(self, guild_id: int, channel_id: int) -> ChannelStructure:
        """A channel's structure (search/structure.py) as of at most ``structure_refresh_s`` seconds ago: its last
        ``structure_messages`` messages read by the store, measured off the event loop; searches that miss together
        share one read."""
        return await self._structures.get((guild_id, channel_id), lambda: self._measure_channel(guild_id, channel_id))

    async def _measure_channel(self, guild_id: int, channel_id: int) -> ChannelStructure:
        recent = await self._recent_in_channel(guild_id, channel_id, self.tuning.structure_messages)
        return await asyncio.to_thread(_measure_recent, recent)

    async def _embed_query(self, query: str) -> np.ndarray:
        """The query's vector as a one-row matrix, read as every store's vector side reads it."""
        return await self._embedder.embed_queries([text.embedding_query(query)])

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        """The ``k`` nearest messages that pass ``filters``, as (row id, inner product), best first."""
        raise NotImplementedError

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        """The ``k`` best keyword matches that pass ``filters``, as (row id, higher-is-better score)."""
        raise NotImplementedError

    async def _context_and_rows(self, sources: list[int], candidates: list[int],
                                filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]:
        """The channel neighbours of ``sources``, and the rows of the candidates and those neighbours that pass."""
        raise NotImplementedError

    async def _recent_in_channel(self, guild_id: int, channel_id: int, limit: int) -> list[RecentMessage]:
        """The last ``limit`` messages of a channel, oldest first, as the structure reads them."""
        raise NotImplementedError


def lenders(neighbours: Neighbours, rows: Mapping[int, CandidateRow]) -> dict[int, int]:
    """The channel id of each message that may lend (a source, and a source's next message), read from its own row
    or, for one the filters left out, from a neighbour's (a source's window stays in its channel)."""
    channels: dict[int, int] = {}
    for rowid, (previous, following, answers, _) in neighbours.items():
        near = next((rows[other] for other in (rowid, following, previous, *answers) if other in rows), None)
        if near is not None:
            channels[rowid] = near.channel_id
            if following is not None:
                channels[following] = near.channel_id
    return channels


def _measure_recent(recent: Sequence[RecentMessage]) -> ChannelStructure:
    return measure([[Posted(message.message_id, message.author_id, message.reply_to_id,
                            questions.asks(message.content)) for message in recent]])


async def _none() -> Hits:
    return []
