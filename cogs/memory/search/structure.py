"""How a channel is written, read from its own stored messages with no labels: turn-taking, bursts, questions,
replies, and from them how far its adjacent messages are a dialogue (what the context rules lend by).

Issue 25: a question's loan to the next message and the neighbour spread assume that adjacent messages are turns of
one exchange, as in a two-person chat. Where people write in bursts and topics interleave, they are not, and the
rules lift the wrong messages (docs/recall-fixtures.md). ``dialogue`` measures that assumption per channel.

Issue 34: where a channel's members use Discord's reply, their replies label which message answers which, and
``calibrated`` reads from them how often the answer a question's loan guesses is its answer there, shrunk toward the
precision measured on annotated chat (docs/loans.md, "Calibration from replies").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..language import questions

__all__ = ("ANSWER_PRIOR", "BASE_RATE", "ChannelStructure", "EXCHANGE_WINDOW", "Exchanges", "MIN_REPLIES", "NEARBY",
           "NEIGHBOUR_PRIOR", "NO_EXCHANGES", "PRIOR_WEIGHT", "Posted", "calibrated", "dialogue", "exchanges", "lift",
           "measure", "reply_lifts", "reply_recall", "strength")

# Measured on the Ubuntu IRC disentanglement corpus (docs/loans.md, "Precision of each loan on annotated IRC"): the
# share of the answers a question's loan guesses (the next other author's message, the one asked) that answer it,
# of adjacent messages one of which responds to the other, and of any two messages 1 to 4 apart (the base rate).
ANSWER_PRIOR = 0.18
NEIGHBOUR_PRIOR = 0.238
BASE_RATE = 0.146
# How far apart the pairs BASE_RATE was measured on may be (1 to 4 messages): a channel's replies among such pairs say
# what share of its links they mark (``reply_recall``).
NEARBY = 4
# The prior's weight, in pairs: a channel's replies outweigh it from some twenty labelled pairs on.
PRIOR_WEIGHT = 20.0
# Replies label a channel's pairs only where its members use them: below this many among the messages read, a
# missing reply says nothing (the channel keeps the rules read from its turn-taking alone).
MIN_REPLIES = 20


# How many messages before a question a Discord reply between its asker and a guessed answer's author says the two
# are talking (docs/loans.md, "Whom a reply addresses": on annotated IRC such a guess answers 54% of the time, 11%
# without one).
EXCHANGE_WINDOW = 20


class Posted(NamedTuple):
    """What the structure reads of a message, in its channel's order: who wrote it, what it replies to (a Discord
    message id) and whether it asks (language.questions.asks)."""

    message_id: int
    author_id: int
    reply_to_id: int | None
    asks: bool


@dataclass(frozen=True, slots=True)
class ChannelStructure:
    """One channel's (or several channels' pooled) structure.

    ``turn_taking``: share of messages (after a channel's first) whose author differs from the previous message's;
    ``own_follow`` is the rest. ``chance_turn_taking``: the turn-taking the same authors would show written in a
    random order (1 − Σ share², each author's share of the channel's messages). ``dialogue``: how far turn-taking
    exceeds that chance, as a share of the most it could, or how nearly two people wrote it (``dialogue()``). ``mean_burst``: messages per run of one
    author's consecutive messages. ``questions``: share of messages that ask. ``question_other_next``: of the
    questions that have a next message, the share whose next message is another author's. ``replies``: share of
    messages that are a Discord reply. ``reply_distance``: median number of messages between a reply and what it
    replies to (1: the next message); 0 when there are no replies.

    What the calibration from replies reads (``reply_lifts``): ``replying``, how many messages are a Discord reply;
    ``answers``, the answers the question loan guesses, and ``answers_replied``, those that reply to their question;
    ``pairs``, adjacent messages, and ``pairs_replied``, the later replying to the earlier; ``nearby``, pairs of
    messages 1 to ``NEARBY`` apart, and ``nearby_replied``, the later replying to the earlier.
    """

    messages: int
    authors: int
    turn_taking: float
    own_follow: float
    chance_turn_taking: float
    dialogue: float
    mean_burst: float
    questions: float
    question_other_next: float
    replies: float
    reply_distance: float
    replying: int = 0
    pairs: int = 0
    pairs_replied: int = 0
    nearby: int = 0
    nearby_replied: int = 0
    answers: int = 0
    answers_replied: int = 0


NO_MESSAGES = ChannelStructure(0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def dialogue(turn_taking: float, chance: float) -> float:
    """How far adjacent messages are turns of one exchange, from 0 to 1: the larger of two readings.

    Turn-taking: how much more often than chance the author changes from one message to the next, from 0 (no more
    than authors written in a random order) to 1 (every message answers another author's): (turn_taking − chance) /
    (1 − chance), clamped. A bursty group, whose many authors would change often by chance alone, reads 0.
    Two people: with two authors every change of author is one answering the other, however long their bursts (which
    put turn-taking below chance). Read from the effective number of authors, 1 / (1 − chance) (1 / Σ share²):
    1 at two, falling to 0 at one (a monologue) and at three (a group, which only turn-taking can show to be one
    exchange)."""
    if chance >= 1.0:
        return 0.0
    taking_turns = (turn_taking - chance) / (1.0 - chance)
    two_people = round(1.0 - abs(1.0 / (1.0 - chance) - 2.0), 9)  # three authors exactly: 0, not 4e-16
    return min(max(taking_turns, two_people, 0.0), 1.0)


def strength(dialogue: float, full_at: float) -> float:
    """What share of their weight the rules that lend by the order of messages keep in a channel of this
    ``dialogue``: all of it from ``full_at`` up, in proportion below (nothing at chance)."""
    return 1.0 if dialogue >= full_at else dialogue / full_at


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


def calibrated(hits: float, trials: int, prior: float, weight: float = PRIOR_WEIGHT) -> float:
    """The mean of a Beta posterior: ``hits`` of ``trials`` labelled pairs, over a prior of mean ``prior`` worth
    ``weight`` pairs (a channel with few labels keeps nearly the prior)."""
    return (hits + prior * weight) / (trials + weight)


def lift(precision: float, base: float = BASE_RATE) -> float:
    """How far ``precision`` stands above the ``base`` rate of any nearby pair, as a share of the most it could
    (0 at or below the base rate): the weight a loan of that precision keeps."""
    return max((precision - base) / (1.0 - base), 0.0)


def reply_recall(structure: ChannelStructure) -> float:
    """What share of a channel's links its Discord replies mark, read against the base rate: of any two messages 1 to
    ``NEARBY`` apart, BASE_RATE are linked on annotated chat, so a channel whose replies link fewer of its nearby pairs
    marks that share of its links. All of them (1.0) where its replies link as many or more, or link fewer than
    ``MIN_REPLIES`` nearby pairs (too few to read a share from)."""
    if structure.nearby_replied < MIN_REPLIES or not structure.nearby:
        return 1.0
    return min(structure.nearby_replied / structure.nearby / BASE_RATE, 1.0)


def reply_lifts(structure: ChannelStructure) -> tuple[float, float] | None:
    """What a channel's Discord replies say its loans are worth: the lift (``lift``) of a neighbour and of a guessed
    answer, each ``calibrated`` from the channel's reply labels toward the precision measured on annotated chat;
    None where its members use replies too little (``MIN_REPLIES``) for a missing one to say anything.

    A reply only ever marks a link, so the rates are lower bounds of a channel's precision: they can lend where
    members answer by replying, and never take from what the turn-taking lends. A guessed answer's rate is read
    answer by answer (a guessed answer that replies to its question, as the base rate is read pair by pair), as the
    share it would be were every link marked: the guesses replies confirm, over the share of links they mark
    (``reply_recall``; docs/loans.md, "Calibration from replies")."""
    if structure.replying < MIN_REPLIES:
        return None
    confirmed = min(structure.answers_replied / reply_recall(structure), float(structure.answers))
    return (lift(calibrated(structure.pairs_replied, structure.pairs, NEIGHBOUR_PRIOR)),
            lift(calibrated(confirmed, structure.answers, ANSWER_PRIOR)))


def _guessed(channel: Sequence[Posted], i: int, window: int) -> tuple[int, int]:
    """How many answers the question loan guesses for message ``i`` among the next ``window`` messages, and how many
    of them reply to it on Discord."""
    asked = channel[i - 1].author_id if i else None
    after = channel[i + 1:i + 1 + window]
    answers = questions.answers(channel[i].author_id, asked, [(j, posted.author_id) for j, posted in enumerate(after)])
    question = channel[i].message_id
    return len(answers), sum(after[j].reply_to_id == question for j in answers)


def measure(channels: Iterable[Sequence[Posted]], window: int = 3) -> ChannelStructure:
    """The structure of each channel's messages (each sequence one channel, oldest first), pooled: rates over all
    of them, chance turn-taking weighted by each channel's followers; ``window``: how many messages after a
    question its loan reads (RankingTuning.reply_window)."""
    messages = followers = same = runs = asking = asked_with_next = other_next = replying = 0
    pairs_replied = nearby = nearby_replied = answers = answers_replied = 0
    chance_followers = 0.0
    authors: set[int] = set()
    distances: list[int] = []
    for channel in channels:
        if not channel:
            continue
        position = {posted.message_id: i for i, posted in enumerate(channel)}
        counts = Counter(posted.author_id for posted in channel)
        authors.update(counts)
        messages += len(channel)
        runs += 1
        chance_followers += (len(channel) - 1) * (1.0 - sum((n / len(channel)) ** 2 for n in counts.values()))
        for i, posted in enumerate(channel):
            asking += posted.asks
            nearby += min(i, NEARBY)
            if posted.reply_to_id is not None:
                replying += 1
                if posted.reply_to_id in position:
                    distance = i - position[posted.reply_to_id]
                    distances.append(distance)
                    pairs_replied += distance == 1
                    nearby_replied += 0 < distance <= NEARBY
            if i + 1 < len(channel) and posted.asks:
                asked_with_next += 1
                other_next += channel[i + 1].author_id != posted.author_id
                guessed, replied = _guessed(channel, i, window)
                answers += guessed
                answers_replied += replied
            if i:
                followers += 1
                if posted.author_id == channel[i - 1].author_id:
                    same += 1
                else:
                    runs += 1
    if not messages:
        return NO_MESSAGES
    distances.sort()
    turn_taking, chance = _share(followers - same, followers), _share(chance_followers, followers)
    return ChannelStructure(
        messages=messages, authors=len(authors), turn_taking=turn_taking, own_follow=_share(same, followers),
        chance_turn_taking=chance, dialogue=round(dialogue(turn_taking, chance), 4),
        mean_burst=round(messages / runs, 3), questions=_share(asking, messages),
        question_other_next=_share(other_next, asked_with_next), replies=_share(replying, messages),
        reply_distance=float(distances[len(distances) // 2]) if distances else 0.0, replying=replying,
        pairs=followers, pairs_replied=pairs_replied, nearby=nearby, nearby_replied=nearby_replied, answers=answers,
        answers_replied=answers_replied)


class Exchanges(NamedTuple):
    """Who talks with whom in a channel, read from its Discord replies: each message's place among the messages
    read (by message id), and at each place the two authors its reply joins (empty where it replies to no one else's
    message read)."""

    place: Mapping[int, int]
    joined: tuple[frozenset[int], ...]

    def talking(self, message_id: int, one: int, other: int, within: int = EXCHANGE_WINDOW) -> bool | None:
        """Whether ``one`` and ``other`` replied to each other in the ``within`` messages before ``message_id``; None
        for a message not read (posted since, or too long ago)."""
        at = self.place.get(message_id)
        if at is None:
            return None
        pair = frozenset((one, other))
        return any(joined == pair for joined in self.joined[max(0, at - within):at])


NO_EXCHANGES = Exchanges({}, ())


def exchanges(channel: Sequence[Posted]) -> Exchanges:
    """A channel's ``Exchanges`` (its messages oldest first)."""
    place = {posted.message_id: i for i, posted in enumerate(channel)}
    authors = [posted.author_id for posted in channel]
    joined = tuple(frozenset((posted.author_id, authors[place[posted.reply_to_id]]))
                   if posted.reply_to_id in place and authors[place[posted.reply_to_id]] != posted.author_id
                   else frozenset() for posted in channel)
    return Exchanges(place, joined)
