"""Recall from a terminal: ``search`` (what the bot would recall, with both scores) and ``ask`` (the answer it would
give). A terminal knows no member's permissions: both see every channel, as the host would."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..prompt import ANSWER_RECALL_LIMIT, build_chat_messages
from ..records import MAX_QUERY_CHARS, MAX_RESULTS, Hit, Recall, ScoreParts, SearchFilters
from ..runtime.safe_text import terminal_text
from .options import (FAILED, OK, USAGE, Terminal, channel_label, chosen_guild, discord_id, print_backlog,
                      query_text, result_limit, utc_text, utc_time)

if TYPE_CHECKING:
    from ..memory import Memory
    from ..runtime.profile import MemoryProfile
    from ..rerank.service import RerankerStatus

ID_LINE_START = "message id "
HOST_NOTE = "answering as the host: a terminal knows no member's permissions, so every channel in memory is read"
# The asker's name in the prompt: the bot puts the member's display name there.
HOST_NAME = "The server's host"


def add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--guild", type=discord_id, help="guild id (default: the only guild in memory)")
    parser.add_argument("--channel", type=discord_id, action="append", help="only this channel id (repeatable)")
    parser.add_argument("--author", type=discord_id, action="append", help="only this author's id (repeatable)")
    parser.add_argument("--after", type=utc_time, metavar="DATE",
                        help="only messages after this time (2024-05-01 or 2024-05-01T12:30; UTC)")
    parser.add_argument("--before", type=utc_time, metavar="DATE", help="only messages before this time (UTC)")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    search = commands.add_parser("search", parents=[parent], help="search memory as the bot would recall it",
                                 description="Search memory as the bot would recall it (every channel: a terminal "
                                             "knows no member's permissions). Each hit shows its first-stage score "
                                             "and its rerank score; times are UTC.")
    search.add_argument("query", type=query_text, help=f"what to look for (at most {MAX_QUERY_CHARS} characters)")
    add_filters(search)
    search.add_argument("--limit", type=result_limit, default=10, help=f"how many results (1-{MAX_RESULTS})")
    search.add_argument("--no-rerank", action="store_true", help="first stage only (vector + keyword fusion)")
    search.add_argument("--explain", action="store_true",
                        help="with each hit, why it was found: its rank before and after the reranker, which "
                             "side found it, and what its first-stage score is made of (as the dashboard's Search "
                             "page shows it)")
    search.set_defaults(handler=search_memory, memory="read")
    ask = commands.add_parser("ask", parents=[parent], help="the answer the bot would give: recall, rerank, LLM",
                              description="Recall, rerank and answer as the bot would, as the host (every channel). "
                                          "The answer needs LLM_BASE_URL and LLM_MODEL (LLM_API_KEY if the endpoint "
                                          "wants one); without them it prints the recalled messages.")
    ask.add_argument("question", type=query_text, help=f"the question (at most {MAX_QUERY_CHARS} characters)")
    add_filters(ask)
    ask.set_defaults(handler=ask_memory, memory="read")


async def filters_for(memory: Memory, args: argparse.Namespace, term: Terminal) -> SearchFilters | None:
    """The search's filters; None (after one error line) when the guild is missing or unknown."""
    guild_id = await chosen_guild(memory, args.guild, term.err)
    if guild_id is None:
        return None
    return SearchFilters(guild_id=guild_id, channel_ids=frozenset(args.channel) if args.channel else None,
                         author_ids=frozenset(args.author) if args.author else None,
                         after=args.after, before=args.before)


# Where Discord opens a message (a guild's channel or thread, then the message).
JUMP_URL = "https://discord.com/channels/{guild}/{channel}/{message}"


def format_hit(rank: int, hit: Hit, channel_names: dict[int, str]) -> str:
    """One hit: its scores, ``#channel-name`` (``#id`` where memory has not seen the name), author and UTC time, its
    text, then the ids an admin acts on (forget --message, --member, --channel) and the jump link."""
    rerank_text = "-" if hit.rerank_score is None else f"{hit.rerank_score:.4f}"
    text = terminal_text(" ".join(hit.content.split())[:300])
    channel = channel_label(channel_names, hit.channel_id)
    link = JUMP_URL.format(guild=hit.guild_id, channel=hit.channel_id, message=hit.message_id)
    return (f"{rank:>2}. score={hit.score:.4f} rerank_score={rerank_text} {channel} {terminal_text(hit.author_name)} "
            f"{utc_text(hit.created_at)}\n    {text}\n"
            f"    {ID_LINE_START}{hit.message_id} by {terminal_text(hit.author_name)} (user id {hit.author_id}) in "
            f"{channel} (channel id {hit.channel_id}): {link}")


def format_explanation(rank: int, hit: Hit) -> str:
    """Why ``hit`` was found: its ranks, the sides that found it, and what its first-stage score is made of."""
    after = rank if hit.rerank_score is not None else "-"
    pooled = "" if hit.pooled_by is None else (
        f"\n    in the reranker's pool as {hit.pooled_by.relation} message "
        f"{hit.pooled_by.lender}, scored with it beside")
    return (f"    explain: rank before rerank {hit.rank}, after {after}; found by "
            f"{', '.join(hit.sources) or '-'}\n    {format_parts(hit.score, hit.parts)}{pooled}")


def format_parts(score: float, parts: ScoreParts | None) -> str:
    """``score`` as the sum of its parts (each side: standardised score x weight; loans from the messages around)."""
    if parts is None:
        return "score parts: not reported"
    if parts.tail:
        return ("score parts: none; the vector side's nearest, listed after everything ranked (the model reads too "
                "little of the query to fuse it)")
    terms = [f"{name} {value:.4f} x {weight:.4f}" for name, value, weight in (
        ("keyword", parts.keyword, parts.keyword_weight), ("vector", parts.vector, parts.vector_weight))
        if value is not None]
    terms += [f"{name} {value:+.4f}" for name, value in (
        ("not found by a side", parts.missing), ("loan from a neighbour", parts.neighbour_loan),
        ("loan from a question", parts.question_loan),
        ("loan from a question it replies to", parts.reply_loan), ("said little of its own", parts.said_little))
        if value]
    terms += [f"boost ({boost.reason}) {boost.amount:+.4f}" for boost in parts.boosts]
    return f"score {score:.4f} = " + " + ".join(terms or ["0"])


def format_rerank(recall: Recall, status: RerankerStatus) -> str:
    """The reranker's part of this query, as the recall's own record says it (the service's ``status`` says what
    runs it and why nothing scored)."""
    figures = recall.rerank
    runs_on = f"{status.backend} {status.dtype}" if status.backend else "not loaded"
    if figures is None:
        return f"rerank: {runs_on}, nothing scored ({status.reason or status.last_error or 'no candidates'})"
    return (f"rerank: {figures.by or runs_on}, {figures.scored} of {figures.offered} candidates scored in "
            f"{figures.ms:,.0f} ms "
            f"({figures.cached} from the score cache; prompt prefix cache hits so far: "
            f"{status.prefix_cache_hits if status.prefix_cache_hits is not None else '-'})")


def loading_line(profile: MemoryProfile) -> str:
    """What a command says before it waits for the reranker: what loads, and what a first use costs."""
    settings = profile.reranker
    return (f"reranker: loading {settings.model} ({settings.provider}, {settings.backend}); a first use downloads it "
            "and, on ONNX Runtime, exports it once (minutes); --no-rerank skips it")


async def recall_for(memory: Memory, query: str, filters: SearchFilters, limit: int, rerank: bool,
                     term: Terminal) -> Recall:
    from ..runtime.profile import reranks

    if rerank and reranks(memory.profile):
        print(loading_line(memory.profile), file=term.err)
        await memory.load_reranker()  # the bot's recalls do not wait for the model; this one query does
    return await memory.recall(query, filters, limit, rerank=rerank)


async def search_memory(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    filters = await filters_for(memory, args, term)
    if filters is None:
        return USAGE
    recall = await recall_for(memory, args.query, filters, args.limit, not args.no_rerank, term)
    if not recall.hits:
        print("no results", file=term.out)
    channel_names = memory.names.channel_names(filters.guild_id)
    for rank, hit in enumerate(recall.hits, start=1):
        print(format_hit(rank, hit, channel_names), file=term.out)
        if args.explain:
            print(format_explanation(rank, hit), file=term.out)
    if memory.reranker is not None and not args.no_rerank:
        status = memory.reranker.status()
        if status.loaded or status.reason is None:  # a failed load was said once already, by the reranker's log
            print(format_rerank(recall, status), file=term.err)
    print_backlog(await memory.vectors_pending(), term.err)
    return OK


async def ask_memory(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    """Recall and rerank as the bot's answer does (its recall limit), then ask the LLM the bot would ask."""
    from ..llm import ChatClient, LLMConfig, LLMError

    filters = await filters_for(memory, args, term)
    if filters is None:
        return USAGE
    print(HOST_NOTE, file=term.err)
    hits = (await recall_for(memory, args.question, filters, ANSWER_RECALL_LIMIT, True, term)).hits
    print("recalled:" if hits else "recalled: nothing", file=term.out)
    channel_names = memory.names.channel_names(filters.guild_id)
    for rank, hit in enumerate(hits, start=1):
        print(format_hit(rank, hit, channel_names), file=term.out)
    config = LLMConfig.from_settings(args.settings)
    if config is None:
        print("no answer: answers need an OpenAI-compatible endpoint: set LLM_BASE_URL (e.g. "
              "http://localhost:11434/v1) and LLM_MODEL, and LLM_API_KEY if it wants one; the bot then replies with "
              "the recalled messages above", file=term.err)
        return OK
    if not hits:  # as the bot: with nothing recalled it says so and asks no LLM
        print("answer: nothing in memory answers that", file=term.out)
        return OK
    client = ChatClient(config)
    try:
        answer = await client.complete(build_chat_messages(HOST_NAME, args.question, hits))
    except LLMError as error:
        print(f"error: the LLM answer failed ({error}); the bot would reply with the recalled messages", file=term.err)
        return FAILED
    finally:
        await client.close()
    # The answer keeps its lines (LF); within them, what the LLM repeats of members' text is shown, not obeyed.
    print(f"answer ({config.model}):\n" + "\n".join(map(terminal_text, answer.split("\n"))), file=term.out)
    return OK
