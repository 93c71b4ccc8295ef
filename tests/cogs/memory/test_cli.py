"""``python -m cogs.memory import|search``: the admin's terminal view of memory."""

import asyncio
import io
import json
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from cogs.memory import models as models_module
from cogs.memory.__main__ import parse_args, run
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.store.sqlite.integrity import RESTORE_ADVICE
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import ProfileError, load_profile

REPO = Path(__file__).resolve().parents[3]
# What must return while the embedding model is blocked gets this long: never reached when it does return.
BLOCKED_BOUND_S = 120.0


def export(messages):
    return {
        "guild": {"id": "1", "name": "Picnic Club"},
        "channel": {"id": "20", "type": "GuildTextChat", "categoryId": None, "name": "general"},
        "messages": messages,
    }


def message(message_id, content, minute):
    return {
        "id": str(message_id), "type": "Default", "timestamp": f"2024-05-01T12:{minute:02d}:00+00:00",
        "timestampEdited": None, "content": content,
        "author": {"id": "5", "name": "alice", "discriminator": "0", "nickname": None, "isBot": False},
        "attachments": [], "embeds": [],
    }


@pytest.fixture
def cli(tmp_path, tiny_profiles_dir):
    async def call(*argv):
        out, err = io.StringIO(), io.StringIO()
        base = ["--db", str(tmp_path / "m.sqlite3"), "--index-dir", str(tmp_path / "idx"),
                "--profile", str(tiny_profiles_dir / "tiny-a.toml")]
        code = await run(parse_args([*base, *argv]), out, err)
        return code, out.getvalue(), err.getvalue()

    return call


@pytest.fixture
def export_file(tmp_path):
    path = tmp_path / "general.json"
    path.write_text(json.dumps(export([message(30, "the picnic moved to Saturday", 0),
                                       message(31, "bring blankets", 1)])), encoding="utf-8")
    return path


async def test_import_reports_what_it_read(cli, export_file):
    code, out, _ = await cli("import", str(export_file))
    assert (code, out) == (0, f"{export_file}: #general (guild 1): 2 stored, 0 already stored, 0 skipped, 0 rejected\n"
                              "imported 1 of 1 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected\n")


async def test_import_shows_its_progress_as_plain_lines_off_a_terminal(cli, export_file):
    _, _, err = await cli("import", str(export_file))
    assert re.search(r"^Picnic Club #general: 2/2 \(100%\), \d+ msg/s, done in \d\d:\d\d\n$", err, flags=re.M)


async def test_importing_twice_stores_each_message_once(cli, export_file):
    await cli("import", str(export_file))
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "picnic", "--no-rerank")
    assert len(re.findall(r"^ *\d+\. ", out, flags=re.M)) == 2


async def test_search_prints_first_stage_and_rerank_scores(cli, export_file):
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "when is the picnic", "--limit", "1")
    assert re.fullmatch(r" 1\. score=\d\.\d{4} rerank_score=\d\.\d{4} #general alice 2024-05-01 12:00 UTC\n"
                        r"    the picnic moved to Saturday\n    message id \d+ by alice \(user id \d+\) in #general "
                        r"\(channel id \d+\): https://discord\.com/channels/\d+/\d+/\d+\n", out)


async def test_search_explain_says_why_each_hit_was_found(cli, export_file):
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "when is the picnic", "--limit", "2", "--explain")
    explained = re.findall(r"^    explain: rank before rerank (\d+), after (\d+); found by ([a-z, ]+)\n"
                           r"    score (-?\d+\.\d+) = (.+)$", out, flags=re.M)
    assert [after for _, after, _, _, _ in explained] == ["1", "2"]
    assert all(int(before) >= 1 and {"vector", "keyword", "context"} >= set(found.split(", "))
               for before, _, found, _, _ in explained)
    for _, _, found, score, terms in explained:  # the printed parts add up to the printed score
        sides = re.findall(r"(keyword|vector) (-?\d+\.\d+) x (\d+\.\d+)", terms)
        loans = re.findall(r"(?:not found by a side|loan from [a-z ]+) ([+-]\d+\.\d+)", terms)
        assert {side for side, _, _ in sides} == set(found.split(", ")) - {"context"}
        total = sum(float(value) * float(weight) for _, value, weight in sides) + sum(map(float, loans))
        assert abs(total - float(score)) < 1e-3, (score, terms)


async def test_search_without_rerank_has_no_rerank_score(cli, export_file):
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "picnic", "--no-rerank", "--limit", "1")
    assert "rerank_score=- " in out


async def test_search_with_several_guilds_asks_for_one(cli, export_file, tmp_path):
    other = tmp_path / "other.json"
    data = export([message(40, "hello", 0)])
    data["guild"] = {"id": "2", "name": "Chess Night"}
    data["channel"]["id"] = "21"  # a channel of its own: guild 1 holds channel 20
    other.write_text(json.dumps(data), encoding="utf-8")
    await cli("import", str(export_file), str(other))
    code, _, err = await cli("search", "picnic")
    assert (code, err) == (2, "error: pass --guild (guilds in memory: 1 (Picnic Club), 2 (Chess Night))\n")


async def test_a_bad_export_is_an_error_not_a_traceback(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{}", encoding="utf-8")
    code, _, err = await cli("import", str(path))
    assert (code, err) == (1, f"error: {path}: not a DiscordChatExporter JSON export (missing or bad 'guild')\n")


async def test_search_reports_the_rerankers_part_of_the_query_on_stderr(cli, export_file):
    await cli("import", str(export_file))
    _, _, err = await cli("search", "when is the picnic", "--limit", "1")
    assert re.fullmatch(r"reranker: loading .*tiny-qwen3-reranker\d* \(local, torch\); a first use downloads it and, "
                        r"on ONNX Runtime, exports it once \(minutes\); --no-rerank skips it\n"
                        r"rerank: torch float32, 2 of 2 candidates scored in [\d,]+ ms \(0 from the score cache; "
                        r"prompt prefix cache hits so far: 0\)\n", err)


def refusal(capsys, *argv):
    """Exit code and the last line on stderr when argparse refuses ``argv``."""
    with pytest.raises(SystemExit) as exited:
        parse_args(list(argv))
    return exited.value.code, capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("limit", ["-5", "0", "51", "10000"])
def test_a_limit_outside_1_to_50_is_refused(capsys, limit):
    assert refusal(capsys, "search", "picnic", "--limit", limit) == (
        2, f"python -m cogs.memory search: error: argument --limit: must be between 1 and 50; you gave {limit}")


def test_a_limit_that_is_not_a_number_is_refused(capsys):
    assert refusal(capsys, "search", "picnic", "--limit", "ten") == (
        2, "python -m cogs.memory search: error: argument --limit: must be a whole number in digits 0-9; you gave 'ten'")


# int() reads all of these: other scripts' digits ("٣" is 3), superscripts pass isdigit(), full-width digits, a sign.
@pytest.mark.parametrize("value", ["²", "٣", "１", "+5", "1_0", " 5", ""])
@pytest.mark.parametrize("option", ["--limit", "--guild"])
def test_a_number_in_anything_but_ascii_digits_is_refused(capsys, option, value):
    assert refusal(capsys, "search", "picnic", option, value) == (
        2, f"python -m cogs.memory search: error: argument {option}: must be a whole number in digits 0-9; "
           f"you gave {value!r}")


@pytest.mark.parametrize("value", [str(2**63), str(2**64), "1" + "0" * 5000])
def test_an_id_past_64_bits_is_refused(capsys, value):
    code, line = refusal(capsys, "search", "picnic", "--guild", value)
    assert code == 2 and line.startswith("python -m cogs.memory search: error: argument --guild: must be ")


def test_ascii_digits_are_read_as_they_are():
    args = parse_args(["search", "picnic", "--limit", "7", "--guild", str(2**63 - 1)])
    assert (args.limit, args.guild) == (7, 2**63 - 1)


def test_a_blank_query_is_refused(capsys):
    assert refusal(capsys, "search", "  ") == (
        2, "python -m cogs.memory search: error: argument query: is blank; give some words to search for")


def test_an_overlong_query_is_refused(capsys):
    assert refusal(capsys, "search", "picnic " * 43) == (
        2, "python -m cogs.memory search: error: argument query: must be at most 300 characters; you gave 301")


def test_a_guild_that_is_no_discord_id_is_refused(capsys):
    assert refusal(capsys, "search", "picnic", "--guild", "-3") == (
        2, "python -m cogs.memory search: error: argument --guild: must be a Discord id (a positive whole number); "
           "you gave -3")


async def test_importing_a_missing_file_reports_it_and_imports_the_others(cli, export_file, tmp_path):
    missing = tmp_path / "missing.json"
    code, out, err = await cli("import", str(missing), str(export_file))
    assert (code, err.splitlines()[0], out.splitlines()[-1]) == (
        1, f"error: {missing}: no such file",
        "imported 1 of 2 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected")


async def test_an_unknown_profile_is_an_error_not_a_traceback(tmp_path):
    with pytest.raises(ProfileError) as unknown:
        load_profile("nonsense")
    out, err = io.StringIO(), io.StringIO()
    args = parse_args(["--db", str(tmp_path / "m.sqlite3"), "--profile", "nonsense", "search", "picnic"])
    assert (await run(args, out, err), err.getvalue()) == (2, f"error: {unknown.value}\n")


def test_a_refused_argument_exits_2_without_a_traceback():
    done = subprocess.run([sys.executable, "-m", "cogs.memory", "search", "picnic", "--limit", "-5"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr.splitlines()[-1], "Traceback" in done.stderr) == (
        2, "python -m cogs.memory search: error: argument --limit: must be between 1 and 50; you gave -5", False)


async def test_reimporting_an_export_does_not_bring_back_a_message_deleted_since(cli, export_file, tmp_path,
                                                                               tiny_reranker_profile):
    await cli("import", str(export_file))
    bot_memory = await Memory.open(tiny_reranker_profile, tmp_path / "m.sqlite3", tmp_path / "idx")
    await bot_memory.delete([30])  # deleted on Discord while the bot ran
    await bot_memory.close()
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "picnic blankets", "--no-rerank")
    assert re.findall(r"^    (?!message id )(.*)$", out, flags=re.M) == ["bring blankets"]


async def test_a_damaged_database_is_one_error_line_not_a_traceback(cli, export_file, tmp_path):
    (tmp_path / "m.sqlite3").write_bytes(b"not a database" * 500)
    code, _, err = await cli("import", str(export_file))
    assert (code, err.splitlines()[-1]) == (
        1, f"error: the memory database {tmp_path / 'm.sqlite3'} is damaged (file is not a database). "
           + RESTORE_ADVICE.format(path=tmp_path / "m.sqlite3"))


class BlockedModel:
    """Every bulk ``embed`` of the real EmbeddingService waits for ``gate``, which the test opens only at its end."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gate = asyncio.Event()
        self.calls = 0
        original = EmbeddingService.embed

        async def blocked(service, texts, *, interactive=None):
            self.calls += 1
            await self.gate.wait()
            return await original(service, texts, interactive=interactive)

        monkeypatch.setattr(EmbeddingService, "embed", blocked)


@pytest.fixture
async def backlog(tmp_path, tiny_profiles_dir, make_record, monkeypatch):
    """1,000 stored messages waiting for their vectors, the model blocked: what a bot killed mid-backlog leaves."""
    model = BlockedModel(monkeypatch)
    memory = await Memory.open(load_profile(str(tiny_profiles_dir / "tiny-a.toml")), tmp_path / "m.sqlite3",
                               tmp_path / "idx")
    for message_id in range(1, 1001):
        await memory.add(make_record(message_id, f"picnic note {message_id}"))
    await asyncio.wait_for(memory.flush(), BLOCKED_BOUND_S)
    await asyncio.wait_for(memory.close(), BLOCKED_BOUND_S)
    model.calls = 0
    yield model
    model.gate.set()


BACKLOG_LINE = ("1000 stored messages wait for their vectors: found by their words now, by their meaning once the bot "
                "(or the next import) has embedded them\n")


async def test_a_search_with_a_backlog_closes_at_once_and_says_what_waits(cli, backlog):
    code, out, err = await asyncio.wait_for(cli("search", "picnic", "--no-rerank", "--limit", "3"), BLOCKED_BOUND_S)
    assert (code, len(re.findall(r"^ *\d+\. ", out, flags=re.M)), err, backlog.calls) == (0, 3, BACKLOG_LINE, 0)


async def test_check_says_what_waits_for_vectors(cli, backlog):
    code, _, err = await asyncio.wait_for(cli("check"), BLOCKED_BOUND_S)
    assert (code, err) == (0, BACKLOG_LINE)


async def test_an_import_reports_once_the_vectors_are_there(cli, export_file, tmp_path):
    code, _, _ = await cli("import", str(export_file))
    with closing(sqlite3.connect(tmp_path / "m.sqlite3")) as connection:
        vectors = connection.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    assert (code, vectors) == (0, 2)


async def test_an_import_counts_the_messages_still_waiting_for_vectors(cli, export_file, monkeypatch):
    async def failing(service, texts, *, interactive=None):
        raise RuntimeError("the model fell over")

    monkeypatch.setattr(EmbeddingService, "embed", failing)
    code, out, _ = await cli("import", str(export_file))
    assert code == 1
    assert re.search(r"^imported 1 of 1 file\(s\): 2 stored, 0 already stored, 0 skipped, 0 rejected; 2 stored "
                     r"messages wait for their vectors \(the embedding model fails \(.*\); they are embedded "
                     r"later\)\n$", out, flags=re.M), out


@pytest.fixture
def rerankers_built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The profiles a reranker was built for during the test (a spy around the real builder)."""
    built: list[str] = []
    real = models_module.build_reranker

    def spy(profile, *args):
        built.append(profile.name)
        return real(profile, *args)

    monkeypatch.setattr(models_module, "build_reranker", spy)
    return built


async def test_import_and_a_search_without_rerank_never_load_a_reranker(cli, export_file, rerankers_built):
    imported, _, _ = await cli("import", str(export_file))
    searched, out, err = await cli("search", "picnic", "--no-rerank")
    assert (imported, searched, "rerank_score=- " in out, err, rerankers_built) == (0, 0, True, "", [])


async def test_a_reranked_search_loads_the_reranker_when_it_needs_it(cli, export_file, rerankers_built):
    await cli("import", str(export_file))
    code, out, _ = await cli("search", "when is the picnic", "--limit", "1")
    assert (code, "rerank_score=- " in out, rerankers_built) == (0, False, ["tiny-a"])


async def test_reapply_erasures_applies_what_the_ledger_holds_and_the_database_lacks(cli, export_file, tmp_path):
    """The one step after pg_restore (or a restore by hand): what was erased after the dump is erased again."""
    from cogs.memory.privacy.ledger import LEDGER_NAME, Erasure, ErasureLedger

    await cli("import", str(export_file))
    await ErasureLedger(tmp_path / LEDGER_NAME).append(Erasure.new("forget", guild_id=1, message_ids=(30,)))
    first = await cli("reapply-erasures")
    again = await cli("reapply-erasures")
    _, out, _ = await cli("search", "picnic Saturday", "--no-rerank")
    line = "erasures: {} applied again ({} messages forgotten); memory holds nothing the erasure ledger erased\n"
    assert (first[:2], again[:2]) == ((0, line.format(1, 1)), (0, line.format(0, 0)))
    assert "picnic" not in out


async def test_an_import_while_another_process_holds_the_write_lock_is_one_line_on_the_terminal(
        cli, export_file, tmp_path, tiny_profiles_dir):
    """The writer's warning, the tombstone prune and the close said it too: the command's error line is enough."""
    from tests.fixtures.core import write_locked

    await cli("import", str(export_file))
    later = tmp_path / "later.json"
    later.write_text(json.dumps(export([message(32, "the cake is lemon", 2)])), encoding="utf-8")
    with write_locked(tmp_path / "m.sqlite3"):
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "cogs.memory", "--db", str(tmp_path / "m.sqlite3"), "--index-dir",
                             str(tmp_path / "idx"), "--profile", str(tiny_profiles_dir / "tiny-a.toml"), "import",
                             str(later)], cwd=REPO, capture_output=True, text=True, timeout=300)
    said = [line for line in done.stderr.splitlines() if line.startswith(("error:", "WARNING", "ERROR", "Traceback"))]
    assert (done.returncode, said) == (1, [
        f"error: 1 messages of {later} were not stored (another process holds the database's write lock); what is "
        "stored is kept, so run the same import again once that is fixed"])
