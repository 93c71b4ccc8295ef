"""RankingTuning: every weight and budget of the first stage in one frozen record, today's values as defaults.

A profile holds one and may set any of them in an optional ``[ranking]`` table (profile.py validates it); the first
stage (search/first_stage.py) reads its profile's copy, and a test or a benchmark passes its own. It lives here, below
both, so that a profile never imports search. Why each value is what it is: docs/ranking.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("RankingTuning",)


@dataclass(frozen=True, slots=True)
class RankingTuning:
    """How the first stage fuses, spreads and budgets; measurements behind each default in docs/ranking.md."""

    # Share of the fused (z-scored) score from the vector side, before the query's script coverage scales it.
    vector_weight: float = 0.35
    # At or below this share of the query's words read by the embedding model, the vector side only fills the tail.
    min_covered_share: float = 0.5
    # Coordination (search/coordination.py): in a hybrid search a keyword hit keeps, of what it scores above a message
    # the keyword side missed, the IDF-weighted share of the query's terms it holds to this power, so that a message
    # repeating one word of the question does not outrank one the vector side ranks higher; what it lends its
    # neighbours still follows its whole match. 0 switches the rule off (docs/loans.md, "Recall with the rules").
    keyword_coordination: float = 0.5
    # What a hit lends its previous and its next message in the channel, times the channel's dialogue
    # (search/structure.py: how much more often than chance its author changes between adjacent messages).
    context_weight: float = 0.2
    next_context_weight: float = 0.5
    # What a question lends what may answer it (and passes on of what it got itself): to a Discord reply in full, to
    # the answer guessed from the order of messages (the next other author's, the one asked) times the dialogue.
    answer_context_weight: float = 1.0
    # The dialogue is read from each channel's last structure_messages messages, again after structure_refresh_s
    # seconds; read_structure = false counts every channel a dialogue (the rules at full strength everywhere).
    read_structure: bool = True
    # From this dialogue up the rules keep their full weight; below it, in proportion (structure.strength).
    dialogue_full_at: float = 0.5
    # Where a channel's members use Discord's reply, the neighbour spread and the guessed question loan keep at least
    # what its replies say they are worth (structure.reply_lifts: measured precision shrunk toward annotated chat's,
    # as a lift over the base rate); false reads the dialogue alone (docs/loans.md, "Calibration from replies").
    reply_calibration: bool = True
    # Informativeness (search/informative.py): a message whose terms are worth informative_from or less (a term is
    # worth its IDF in the channel over the most an IDF can be there) borrows nothing by the order of messages, and
    # gets nothing for a name the question gives (its author, channel, time: named_boost), from
    # informative_full_at up in full, linearly between; informative_full_at = 0 switches the rule off. Measured in
    # docs/loans.md: below the 5th percentile of answer-bearing messages' worth, above most content-free ones'.
    informative_from: float = 0.5
    informative_full_at: float = 1.0
    # Such a message also keeps only that share of what it scores above a message no side returned: off, since on
    # annotated IRC it also sinks short answers in common words ("terminal") (docs/loans.md).
    informative_own: bool = False
    structure_messages: int = 2_000
    structure_refresh_s: float = 600.0
    # How many messages after a question, and how many Discord replies to it, may take that loan.
    reply_window: int = 3
    # How many of a question's Discord replies take its loan (at most reply_window, the replies a window reads); 0
    # lends nothing through Discord replies (bench.recall --ablate replies).
    replies_lent: int = 3
    # An answer a reply names (a Discord reply to the question; a guessed answer that replies to the asker, or by the
    # one the question replies to) borrows this share more than the question's score: it ranks above the question,
    # since it holds what was asked (the question ranks first otherwise, its own words matching the search's). A
    # Discord reply is also given back what the keyword side's floor costs it, up to this share of its loan. 0 lends
    # the question's score alone (docs/loans.md, "The answer above its question").
    reply_lift: float = 0.1
    # The reranker's pool (search/pool.py): each of the first pool_lenders first-stage hits brings up to
    # pool_per_hit messages of its context right after it (its Discord replies and the message it replies to; with
    # pool_burst its author's adjacent messages; with pool_guessed the answers a question guesses and the question
    # before a hit), judged by the reranker with the hit beside them; they displace the first stage's tail. With
    # pool_groups_only, the burst and the guessed context only in a channel the first stage reads as a group
    # (structure.strength below 1: where it lends little by the order of messages). A pool smaller than
    # pool_full_from has no tail to spare: there only the first hit lends, and only its Discord links. 0 lenders:
    # the pool is the first stage's top hits. Measured on every dataset at depths 6, 20, 50 in docs/loans.md.
    pool_lenders: int = 3
    pool_per_hit: int = 1
    pool_burst: bool = True
    pool_guessed: bool = True
    pool_groups_only: bool = True
    pool_full_from: int = 20
    # How many of the strongest fused hits lend to their neighbours.
    context_sources: int = 50
    # bm25() weight of the body column; a name match adds its term's IDF times author_weight.
    body_weight: float = 1.0
    author_weight: float = 1.0
    # Documents the terms that decide a keyword match may cover together; commoner terms only rank.
    keyword_max_postings: int = 4_000
    # A long query is cut to its first terms.
    keyword_max_terms: int = 32
    # A filtered vector search first asks for this many times k hits, then drops the ones the filters reject.
    vector_overfetch: int = 4
    # What a candidate gains for each kind of name the question gives that it answers (its author, its channel, its
    # time: search/named.py), times the share of candidates that do not; never a filter.
    named_boost: float = 1.0
    # A member's name that opens the question before ':' or ',' is whom it is put to (search/named.py): on the keyword
    # side a word of the question, without the score a name adds to every message of its author (the named boost
    # still reads it). Off: matched as any name the question holds.
    read_address: bool = True
    # A guild's member and channel names, as the question is read against them, are read again after this long.
    names_refresh_s: float = 300.0
