"""A reranker that cannot load is one line saying what to do: where the model was looked for, and the ways out (the
network once, an offline cache, a local path in the profile, a profile without the reranker), said once."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from huggingface_hub import constants
from huggingface_hub.errors import LocalEntryNotFoundError

from cogs.memory.cog.replies import EMBED_FIELD_CHARS, stats_embed
from cogs.memory.memory import Memory
from cogs.memory.records import SearchFilters
from cogs.memory.rerank.load_help import UNAVAILABLE, load_failure
from cogs.memory.rerank.local import load_tokenizer
from cogs.memory.rerank.service import RerankerService
from cogs.memory.runtime.config import PROFILES_DIR
from cogs.memory.runtime.profile import MemoryProfile, ProviderSettings, load_profile
from tests.cogs.memory.rerank.test_providers import NO_LATENCIES, STATS
from tests.cogs.memory.rerank.test_service import QUERY, candidates
from tests.fixtures.core import RecordFactory
from tests.fixtures.reranker import rerank_results, with_reranker
from tests.fixtures.waiting import eventually

UNCACHED = "no-such-org/never-cached-reranker"
PLAIN_PROFILE = 'description = "no reranker"\nembedding_model = "intfloat/multilingual-e5-small"\n' \
                '[reranker]\nenabled = false\n'


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """HF_HUB_OFFLINE=1 as the hub reads it: nothing is downloaded, so a model not cached fails at once."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def profiles_dir(tmp_path: Path) -> Path:
    """cpu-small as shipped, and a profile without the reranker."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "cpu-small.toml").write_text((PROFILES_DIR / "cpu-small.toml").read_text(encoding="utf-8"),
                                           encoding="utf-8")
    (folder / "plain.toml").write_text(PLAIN_PROFILE, encoding="utf-8")
    return folder


def failure_of(model: str) -> Exception:
    """What loading ``model``'s tokenizer raises, as the reranker's loader meets it."""
    with pytest.raises(Exception) as raised:
        load_tokenizer(model)
    return raised.value


def test_a_model_not_cached_while_offline_says_each_way_out(offline: None, profiles_dir: Path) -> None:
    profile = load_profile("cpu-small", profiles_dir)
    line = load_failure(UNCACHED, failure_of(UNCACHED), profile, profiles_dir)
    assert line == (
        f"{UNCACHED} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and HF_HUB_OFFLINE=1 forbids "
        "downloading it; to fix it: unset HF_HUB_OFFLINE and allow network access once (the model is then cached), "
        "or point HF_HOME at a cache that has it; or in "
        f"{profiles_dir / 'cpu-small.toml'}, put a local folder holding the model in [reranker] model (or enabled = "
        "false there); or choose plain, a profile without the reranker (MEMORY_PROFILE, --profile or /memory profile "
        "set; it embeds with another model, so every message is embedded again)")


def test_a_model_that_could_not_be_downloaded_says_to_allow_the_network_once(
        monkeypatch: pytest.MonkeyPatch, profiles_dir: Path) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    try:  # as transformers raises it when huggingface.co cannot be reached
        try:
            raise LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub")
        except LocalEntryNotFoundError as hub_error:
            raise OSError("We couldn't connect to 'https://huggingface.co' to load the files\nCheck your "
                          "internet connection") from hub_error
    except OSError as error:
        line = load_failure(UNCACHED, error, load_profile("cpu-small", profiles_dir), profiles_dir)
    assert line.startswith(f"{UNCACHED} could not be downloaded (huggingface.co cannot be reached) and is not in "
                           f"the Hugging Face cache ({constants.HF_HUB_CACHE}); to fix it: allow network access to "
                           "huggingface.co once (the model is then cached), or set HF_HUB_OFFLINE=1 and point "
                           "HF_HOME at a cache that has it; or in ")
    assert "\n" not in line


def test_a_folder_that_does_not_exist_says_where_to_put_another(offline: None, profiles_dir: Path) -> None:
    line = load_failure("/nowhere/qwen3", failure_of("/nowhere/qwen3"), load_profile("cpu-small", profiles_dir),
                        profiles_dir)
    assert line.startswith("/nowhere/qwen3 is neither a folder on this machine nor a model name of the Hugging Face "
                           f"hub; to fix it: in {profiles_dir / 'cpu-small.toml'}, put an existing folder or a hub "
                           "model name in [reranker] model (or enabled = false); or choose plain, ")


def test_any_other_failure_is_its_first_line_and_how_to_run_without(tmp_path: Path) -> None:
    profile = MemoryProfile(name="mine")
    line = load_failure("m", RuntimeError("ONNX export failed\n  a long trace"), profile, tmp_path)
    assert line == ("cannot load m: RuntimeError: ONNX export failed; to fix it: in profile mine's .toml file, set "
                    "enabled = false under [reranker] to run without it")


def test_the_service_logs_the_one_line_once_and_the_traceback_only_at_debug(
        offline: None, tiny_reranker_profile: MemoryProfile, caplog: pytest.LogCaptureFixture) -> None:
    service = RerankerService(tiny_reranker_profile, reranker_model=UNCACHED)
    with caplog.at_level(logging.DEBUG, logger="cogs.memory.rerank"):
        try:
            for _ in range(3):
                rerank_results(service, QUERY, candidates())
            status = service.status()
        finally:
            service.close()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == [f"{UNAVAILABLE}: {status.reason}"]
    assert warnings[0].exc_info is None and "\n" not in warnings[0].getMessage()
    assert status.reason.startswith(f"{UNCACHED} is not in the Hugging Face cache")
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records)


async def test_a_preloading_bot_memory_says_it_once_and_recalls_in_first_stage_order(
        offline: None, tiny_reranker_profile: MemoryProfile, tmp_path: Path, make_record: RecordFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    """As the bot opens memory: the reranker preloads, fails, and every recall after gets first-stage order."""
    profile = with_reranker(tiny_reranker_profile, model=UNCACHED, preload=True)
    with caplog.at_level(logging.WARNING):
        memory = await Memory.open(profile, tmp_path / "memory.sqlite3", tmp_path / "indexes")
        try:
            for message_id, text in enumerate(["the picnic moved to Saturday", "bring blankets"], start=1):
                await memory.add(make_record(message_id, text))
            await memory.flush(vectors=True)
            await eventually(lambda: not memory.reranker.status().loading)
            for _ in range(3):
                hits = (await memory.recall("picnic", SearchFilters(guild_id=1), 5)).hits
                assert hits and all(hit.rerank_score is None for hit in hits)
        finally:
            await memory.close()
    said = [r.getMessage() for r in caplog.records if UNAVAILABLE in r.getMessage()]
    assert len(said) == 1 and "to fix it:" in said[0]


def test_stats_cut_two_failed_providers_to_what_an_embed_field_holds(offline: None,
                                                                      tiny_reranker_profile: MemoryProfile) -> None:
    profile = with_reranker(tiny_reranker_profile, model=UNCACHED,
                            providers=(ProviderSettings("local", model=None), ProviderSettings("local")))
    service = RerankerService(profile)
    try:
        service.load()
        status = service.status()
    finally:
        service.close()
    field = {f.name: f.value for f in stats_embed("G", STATS, "test-tiny", status, NO_LATENCIES).fields}["Reranker"]
    assert len(field) == EMBED_FIELD_CHARS and field.startswith(f"{UNCACHED} (local: unavailable: {UNCACHED} is not")
