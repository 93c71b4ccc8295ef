"""Loans: what a scored message lends the messages around it in its channel — its previous and next message, a
question's answers and Discord replies — by the order of messages and its channel's dialogue.

The weights come from ``RankingTuning`` (runtime/ranking.py, measured in docs/ranking.md); who neighbours whom is
context.py's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import NamedTuple

from ..runtime.ranking import RankingTuning
from .context import Neighbours

__all__ = ("Loans", "Spread", "spread_to_neighbours", "spread_with_loans")

DEFAULT_TUNING = RankingTuning()


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
                      dialogue: Mapping[int, float] | None = None,
                      informative: Mapping[int, float] | None = None,
                      guessed: Mapping[int, float] | None = None,
                      addressed: Mapping[tuple[int, int], float] | None = None,
                      reply_lift: float = 0.0, unmatched: Mapping[int, float] | None = None) -> Spread:
    """``spread_to_neighbours``, and each loan by kind beside it: a question's loan to a message that replies to it
    on Discord (``replied``: a question's Discord replies) is a reply loan, to another answer a question loan.

    ``dialogue`` is the share of its weight each lender keeps by its channel's dialogue (search/structure.py,
    ``strength``; 1.0 for one it does not name): what a message lends by the order of messages (to its neighbours,
    a question to the answer it guesses) is scaled by it, since adjacent messages are one exchange only where
    authors take turns more than chance; a Discord reply says what it answers, so a question's loan to its replies
    is not. ``guessed``, where given, is what a question's loan to the answer it guesses keeps instead (the
    dialogue, or what its channel's Discord replies say such a guess is worth: structure.reply_lifts, whichever is
    more). What a message keeps of a loan by the order of messages is scaled by its ``informative`` too (1.0 for
    one it does not name; search/informative.py): a message that says nothing of its own keeps nothing as a
    neighbour or a guessed answer, though a question it asks ("which one?") still passes on what it got; a Discord
    reply says which question it answers, so a short one ("yes") keeps all of it. ``addressed`` (context.addressed:
    whom a question and its guessed answer reply to on Discord) overrides what a guessed answer keeps, pair by pair;
    such a pair says which question the answer answers, as a Discord reply does, and keeps what it is lent however
    short the answer. A Discord reply to a question, and a guessed answer whose pair ``addressed`` keeps in full
    (the answer replies to the asker, or is by the one the question replies to), also borrow ``reply_lift`` of the
    loan more: the answer a reply names ranks above its question. A Discord reply is also not held under the keyword
    side's floor by more than it borrowed so: ``unmatched`` (what each message the keyword side did not return scores
    under the mean for it) is given back, up to ``reply_lift`` of the loan. A reply answers its question's words
    rather than repeating them; a guess, right less often, is not given it.
    """
    spread = dict(scores)
    received: dict[int, float] = {}
    replies: dict[int, tuple[int, ...]] = {}
    lent: dict[int, list[float]] = {}
    on_discord = replied or {}

    says = informative or {}
    pairs = addressed or {}
    missed = unmatched or {}

    def lend(target: int, amount: float, kind: int, named: bool = False) -> None:
        if kind != 2 and not named:  # a Discord reply keeps all of its loan, however short; so does one addressed
            amount *= says.get(target, 1.0)
        if amount > 0.0:
            spread[target] = spread.get(target, floor) + amount
            lent.setdefault(target, [0.0, 0.0, 0.0])[kind] += amount

    def strength(lender: int, target: int, answer: bool = False) -> float:
        if target in on_discord.get(lender, ()):
            return 1.0
        if answer and addressed is not None and (lender, target) in addressed:
            return addressed[lender, target]
        if answer and guessed is not None and lender in guessed:
            return guessed[lender]
        return 1.0 if dialogue is None else dialogue.get(lender, 1.0)

    for rowid, (previous, following, answers, following_answers) in neighbours.items():
        score = max(scores[rowid], 0.0)
        if previous is not None and (back := weights[0] * score * strength(rowid, previous)) > 0.0:
            lend(previous, back, 0)
        if rowid in asking:  # a question's loan is added below, with what it got itself
            replies[rowid] = answers
            for reply in answers:
                received[reply] = received.get(reply, 0.0) + answer_weight * score * strength(rowid, reply, True)
        elif following is not None:
            loan = weights[1] * score * strength(rowid, following)
            received[following] = received.get(following, 0.0) + loan
            if loan > 0.0:
                lend(following, loan, 0)
        if following is not None and following in asking and following not in neighbours:
            replies[following] = following_answers
    for question, answers in replies.items():
        loan = answer_weight * max(scores.get(question, floor) + received.get(question, 0.0), 0.0)
        if loan > 0.0:
            for reply in answers:
                on_reply = reply in on_discord.get(question, ())
                pair = pairs.get((question, reply))
                # The answer a reply names, on Discord or by whom the two address, ranks above its question.
                lift = 1.0 + reply_lift if on_reply or (pair is not None and pair >= 1.0) else 1.0
                if (kept := loan * lift * strength(question, reply, True)) > 0.0:
                    if on_reply:
                        kept += min(missed.get(reply, 0.0), reply_lift * loan)
                    lend(reply, kept, 2 if on_reply else 1, pair is not None)
    return Spread(spread, {rowid: Loans(*amounts) for rowid, amounts in lent.items()})
