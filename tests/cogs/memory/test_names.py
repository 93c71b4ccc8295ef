"""The one resolver of ``@name`` and ``#channel`` the terminal and the dashboard share: ids and mentions as they are,
names case aside, a member by every name they wrote under, a shared name refused with every candidate
and its id, and a guild's names never answering in another guild."""

from __future__ import annotations

from cogs.memory.names import (Ambiguous, Candidate, NotFound, Resolution, Resolved, channels, members, mentioned_id,
                               resolve)
from cogs.memory.store.protocol import Store
from tests.fixtures.stores import insert

GUILD_MEMBERS = [Candidate(5, "alice", 2), Candidate(6, "bob", 3)]


def test_a_name_resolves_case_aside_beyond_ascii_letters() -> None:
    assert resolve("ALICE", GUILD_MEMBERS, "@") == Resolved(5)
    assert resolve("ÉLODIE", [Candidate(8, "élodie", 1)], "@") == Resolved(8)
    assert resolve("STRASSE", [Candidate(9, "straße")], "#") == Resolved(9)


def test_an_id_is_taken_as_it_is_and_digits_written_as_a_name_are_a_name() -> None:
    assert resolve(123, GUILD_MEMBERS, "@") == Resolved(123)
    assert resolve("2024", [Candidate(7, "2024", 1)], "@") == Resolved(7)
    assert resolve("123", GUILD_MEMBERS, "@") == NotFound("123", ())


def test_a_mention_of_the_right_kind_is_its_id() -> None:
    assert resolve("<@42>", GUILD_MEMBERS, "@") == Resolved(42)
    assert resolve("<@!42>", GUILD_MEMBERS, "@") == Resolved(42)
    assert resolve("<#20>", [], "#") == Resolved(20)
    assert resolve("<#20>", [], "@") == NotFound("<#20>", ())
    assert resolve("<@42>", [], "#") == NotFound("<@42>", ())


def test_a_mention_holds_a_discord_id_alone() -> None:
    assert mentioned_id(" <@1234567890123456789> ", "@") == 1234567890123456789
    assert [mentioned_id(text, "@") for text in ("<@0>", "<@9223372036854775808>", "<@12>x", "<@ 12>", "@12")] \
        == [None] * 5


def test_a_name_two_members_share_is_refused_with_both_and_their_ids_most_messages_first() -> None:
    shared = [Candidate(7, "Alice", 1), *GUILD_MEMBERS]
    assert resolve("alice", shared, "@") == Ambiguous("alice", (Candidate(5, "alice", 2), Candidate(7, "Alice", 1)))


def test_a_channel_name_two_categories_share_is_refused_with_both_channels_by_id() -> None:
    # Two "general" channels, each under its own category: memory knows the names alone, so both are candidates.
    found = resolve("general", channels({31: "general", 20: "general", 21: "photos"}), "#")
    assert found == Ambiguous("general", (Candidate(20, "general"), Candidate(31, "general")))


def test_an_unknown_name_offers_the_near_names_alone() -> None:
    assert resolve("alic", GUILD_MEMBERS, "@") == NotFound("alic", (Candidate(5, "alice", 2),))
    assert resolve("zed", GUILD_MEMBERS, "@") == NotFound("zed", ())


def test_a_member_under_several_matching_names_is_one_candidate_shown_by_the_newest() -> None:
    rows = [Candidate(7, "Alice", 1, 1.0), Candidate(7, "alice", 1, 2.0), Candidate(8, "ALICE", 1, 3.0),
            Candidate(9, "bob", 4, 4.0)]
    assert resolve("aLiCe", rows, "@") == Ambiguous("aLiCe", (Candidate(7, "alice", 2, 2.0),
                                                              Candidate(8, "ALICE", 1, 3.0)))
    assert resolve("bob", rows, "@") == Resolved(9)


def _shown(found: Resolution) -> list[tuple[int, str, int | None]]:
    assert isinstance(found, Ambiguous), found
    return [(candidate.id, candidate.name, candidate.messages) for candidate in found.candidates]


async def test_a_member_answers_to_every_name_they_wrote_under_a_rename_included(memory_store: Store,
                                                                                make_record) -> None:
    """Memory stores the name a member showed (their display name) when they spoke; a rename since keeps the old."""
    await insert(memory_store,
                 make_record(1, "hello", author_id=7, author_name="alice"),
                 make_record(2, "call me ally", author_id=7, author_name="Ally"),
                 make_record(3, "hi", author_id=8, author_name="bob"))
    known = members(await memory_store.author_names(1))
    assert resolve("ally", known, "@") == Resolved(7)
    assert resolve("ALICE", known, "@") == Resolved(7)
    await insert(memory_store, make_record(4, "I am alice now", author_id=9, author_name="Alice"))
    assert _shown(resolve("alice", members(await memory_store.author_names(1)), "@")) == [(7, "alice", 1),
                                                                                         (9, "Alice", 1)]


async def test_members_sharing_a_name_in_a_store_are_both_candidates(memory_store: Store, make_record) -> None:
    await insert(memory_store,
                 make_record(1, "hello", author_id=7, author_name="Alice"),
                 make_record(2, "again", author_id=7, author_name="alice"),
                 make_record(3, "me too", author_id=8, author_name="ALICE"),
                 make_record(4, "bob here", author_id=9, author_name="bob"))
    known = members(await memory_store.author_names(1))
    assert _shown(resolve("aLiCe", known, "@")) == [(7, "alice", 2), (8, "ALICE", 1)]
    assert resolve("bob", known, "@") == Resolved(9)


async def test_a_guilds_names_never_resolve_in_another_guild(memory_store: Store, make_record) -> None:
    await insert(memory_store,
                 make_record(1, "guild one", guild_id=1, channel_id=10, author_id=7, author_name="alice"),
                 make_record(2, "guild two", guild_id=2, channel_id=20, author_id=9, author_name="alicia"))
    assert resolve("alice", members(await memory_store.author_names(1)), "@") == Resolved(7)
    elsewhere = resolve("alice", members(await memory_store.author_names(2)), "@")
    assert isinstance(elsewhere, NotFound) and [candidate.id for candidate in elsewhere.near] == [9]
    here = resolve("alicia", members(await memory_store.author_names(1)), "@")
    assert isinstance(here, NotFound) and [candidate.id for candidate in here.near] == [7]
