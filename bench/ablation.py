"""The context rules ``bench.recall --ablate`` switches off one at a time, and how each is switched off.

Each rule is a set of overrides named like the fields of the search tuning (``RankingTuning``,
cogs/memory/runtime/ranking.py). Two are not search tuning: ``embedding_scripts`` is the profile's field
(what the embedding model reads, which coverage weighting follows), set on the search engine; ``vector_input`` is
what a stored vector is made of, which takes effect only at ingest (``input_form``). ``vector_form`` is a rule the
core dropped (issue 25: a stored vector is the message alone): its row puts it back, so its contribution is what
dropping it was worth (positive: dropping it gains).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

from cogs.memory.language import keywords as text
from cogs.memory.search.first_stage import FirstStage
from cogs.memory.runtime.ranking import RankingTuning
from cogs.memory.vectors.stored import VectorSource

__all__ = ("ABLATIONS", "INPUT_FORMS", "input_form", "rules", "tuned")

ABLATIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    # A message that asks lends nothing to what answers it (the next message, the one asked, its Discord replies).
    "question_loan": {"answer_context_weight": 0.0},
    # A hit lends nothing to the messages before and after it.
    "neighbour_spread": {"context_weight": 0.0, "next_context_weight": 0.0},
    # A question lends nothing through Discord's reply (the next message and the one asked still get its loan).
    "replies": {"replies_lent": 0},
    # An answer a reply names (a Discord reply, a pair addressed in full) borrows the question's score alone, not a
    # share more: it ties its question.
    "reply_lift": {"reply_lift": 0.0},
    # A name in the question adds nothing to that author's messages.
    "name_match": {"author_weight": 0.0},
    # The question is searched as written: the people, channels and times it names boost nothing (search/named.py).
    "named": {"named_boost": 0.0},
    # A name that opens the question as its address ("CarlFK: is this ...") is matched on the keyword side as any
    # name the question holds: its IDF added to every message of that author (search/named.py).
    "address": {"read_address": False},
    # The vector side keeps its full weight whatever share of the question the model reads.
    "coverage": {"embedding_scripts": "all"},
    # A keyword hit counts in full however little of the question it holds (search/coordination.py).
    "coordination": {"keyword_coordination": 0.0},
    # Every channel counts as a dialogue: the neighbour spread and the guessed question loan at full strength
    # whatever the channel's structure (search/structure.py).
    "structure": {"read_structure": False},
    # A channel's Discord replies say nothing of what its guessed loans are worth: the dialogue alone decides.
    "calibration": {"reply_calibration": False},
    # Every message lends and borrows in full, however little it says of its own (search/informative.py).
    "informativeness": {"informative_full_at": 0.0},
    # A rule kept off: a message that says little also keeps only that share of its own score. Its row puts it
    # on, so its contribution is what leaving it off is worth (positive: off gains).
    "informative_own": {"informative_own": True},
    # Each message's vector is the mean of it alone and after its predecessor (the dropped form), not it alone.
    "vector_form": {"vector_input": "mean"},
})
# What a stored vector is made of: the core's form first (the full system's ingest), then the dropped one.
INPUT_FORMS = ("alone", "mean")


def rules(value: str) -> list[str]:
    """The rules a ``--ablate`` value names: a comma list, or ``all``. Raises ValueError on an unknown one."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    if names == ["all"]:
        return list(ABLATIONS)
    unknown = sorted(set(names) - set(ABLATIONS))
    if not names or unknown:
        raise ValueError(f"rules are {', '.join(ABLATIONS)} or all; got {value!r}")
    return names


@contextmanager
def tuned(engine: FirstStage, overrides: Mapping[str, Any]) -> Iterator[None]:
    """Search with ``overrides`` in force (the engine's ``RankingTuning`` with those fields replaced), then put back
    what was there (also on an error). ``vector_input`` is accepted and ignored here: it was applied at ingest
    (``input_form``)."""
    tuning = {key: value for key, value in overrides.items() if key not in ("embedding_scripts", "vector_input")}
    fields = {field.name for field in dataclasses.fields(RankingTuning)}
    unknown = [key for key in tuning if key not in fields]
    if unknown:
        raise ValueError(f"no search tuning named {', '.join(unknown)}")
    saved, scripts = engine.tuning, engine.scripts
    try:
        engine.tuning = dataclasses.replace(saved, **tuning)
        engine.scripts = overrides.get("embedding_scripts", scripts)
        yield
    finally:
        engine.tuning, engine.scripts = saved, scripts


def _with_previous(self: VectorSource) -> list[str]:
    alone = text.embedding_input(self.author_name, self.content, None)
    if self.previous is None:
        return [alone]
    return [alone, text.embedding_input(self.author_name, self.content, self.previous)]


@contextmanager
def input_form(form: str) -> Iterator[None]:
    """Store vectors in ``form`` (INPUT_FORMS) while inside: ``mean`` embeds each message alone and after its
    predecessor and stores the mean (vectors/stored.py averages the forms ``texts`` gives), as before issue 25.

    The core has no switch for it (it stores the message alone), so the benchmark replaces VectorSource.texts,
    which every path that embeds a message reads, and puts it back afterwards.
    """
    if form not in INPUT_FORMS:
        raise ValueError(f"vector input forms are {', '.join(INPUT_FORMS)}; got {form!r}")
    texts = VectorSource.texts
    try:
        if form == "mean":
            VectorSource.texts = _with_previous  # type: ignore[method-assign]
        yield
    finally:
        VectorSource.texts = texts  # type: ignore[method-assign]
