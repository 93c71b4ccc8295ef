"""MemoryProfile loading/validation and select_profile (the hardware read by faked probes)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from cogs.memory.runtime.ranking import RankingTuning
from cogs.memory.runtime.hardware import CudaDevice, HardwareDetector, HardwareInfo
from cogs.memory.runtime.profile import (
    MemoryProfile,
    ProfileError,
    ProviderSettings,
    load_profile,
    list_profiles,
    provider_chain,
    resolve_device,
    select_profile,
)

CPUINFO_AVX2 = "processor\t: 0\nflags\t\t: fpu sse avx2 fma\n"
SMALL_CPU = HardwareInfo(cpu_cores=2, ram_gb=4.0, cpu_bf16=False)
TINY_CPU = HardwareInfo(cpu_cores=1, ram_gb=2.0, cpu_bf16=False)  # a 2 GB VPS: too small for Qwen3-Reranker


def gpu(total_gb: float) -> HardwareInfo:
    return HardwareInfo(cpu_cores=8, ram_gb=64.0, cpu_bf16=False,
                        cuda_devices=(CudaDevice(0, "Fake GPU", total_gb, total_gb - 1),))


def write_profile(tmp_path: Path, text: str, name: str = "custom") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_the_shipped_profiles_load() -> None:
    assert {"cpu-tiny", "cpu-small", "cpu-bf16", "gpu-small", "gpu-large"} <= {p.name for p in list_profiles()}


def test_shipped_cpu_bf16_profile_uses_bfloat16() -> None:
    profile = load_profile("cpu-bf16")
    assert (profile.device, profile.dtype, profile.requirements.cpu_bf16) == ("cpu", "bfloat16", True)
    assert profile.reranker.precisions == ("openvino-bf16", "openvino-int8", "int8", "bf16", "float32")


def test_shipped_cpu_small_profile_reranks_on_onnx_float32_within_a_time_budget() -> None:
    profile = load_profile("cpu-small")
    settings = profile.reranker
    assert (provider_chain(settings), profile.device, profile.dtype) == ((ProviderSettings("local"),), "cpu", "float32")
    assert (settings.backend, settings.int8, settings.preload, settings.time_budget_ms > 0) == (
        "onnx", False, True, True)
    assert (settings.precisions, settings.candidates, settings.max_candidates) == (
        ("openvino-bf16", "openvino-int8", "int8", "bf16", "float32"), 20, 50)


def test_shipped_cpu_tiny_profile_reranks_with_a_multilingual_cross_encoder_within_a_time_budget() -> None:
    profile = load_profile("cpu-tiny")
    settings = profile.reranker
    assert (provider_chain(settings), settings.model, profile.dtype) == (
        (ProviderSettings("local"),), "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1", "float32")
    assert (settings.preload, settings.time_budget_ms > 0) == (True, True)


def test_bad_choice_names_file_field_and_allowed_values(tmp_path: Path) -> None:
    path = write_profile(tmp_path, 'dtype = "int8"\n')
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(info.value) == (f"{path}: field 'dtype' = 'int8' is invalid; allowed: float32 | bfloat16 | float16")


def test_wrong_type_in_nested_table_names_the_qualified_field(tmp_path: Path) -> None:
    path = write_profile(tmp_path, '[reranker]\nbatch_size = "8"\n')
    with pytest.raises(ProfileError, match=r"field 'reranker.batch_size' = '8' is invalid; allowed: an integer"):
        load_profile(path)


def test_unknown_field_lists_the_allowed_ones(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "[reranker]\nbatchsize = 8\n")
    with pytest.raises(ProfileError, match=r"unknown field 'reranker.batchsize'; allowed: backend, batch_size, "):
        load_profile(path)


def test_out_of_range_value_is_rejected(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "[reranker]\nmin_score = 1.5\n")
    with pytest.raises(ProfileError, match=r"'reranker.min_score' = 1.5 is invalid; allowed: a number in \[0, 1\]"):
        load_profile(path)


def test_a_ranking_table_sets_the_first_stages_tuning_and_leaves_the_rest_at_their_defaults(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "[ranking]\nvector_weight = 0.35\nreply_window = 4\n")
    assert load_profile(path).ranking == RankingTuning(vector_weight=0.35, reply_window=4)
    assert load_profile("cpu-small").ranking == RankingTuning()


@pytest.mark.parametrize(("line", "allowed"), [("vector_weight = 1.5", r"a number in \[0, 1\]"),
                                                ("reply_window = 0", "an integer >= 1"),
                                                ("context_weight = -0.1", "a number >= 0"),
                                                ("keyword_coordination = -0.5", "a number >= 0"),
                                                ('keyword_max_terms = "32"', "an integer")])
def test_a_ranking_value_out_of_range_is_refused(tmp_path: Path, line: str, allowed: str) -> None:
    path = write_profile(tmp_path, f"[ranking]\n{line}\n")
    with pytest.raises(ProfileError, match=rf"field 'ranking\.{line.split()[0]}' = .* is invalid; allowed: {allowed}"):
        load_profile(path)


def test_http_provider_needs_a_url(tmp_path: Path) -> None:
    path = write_profile(tmp_path, '[reranker]\nprovider = "http"\n')
    with pytest.raises(ProfileError, match=r"'reranker.http_url' is required"):
        load_profile(path)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "dtype = \n")
    with pytest.raises(ProfileError, match=rf"^{path}: not valid TOML"):
        load_profile(path)


def test_unknown_profile_name_lists_the_known_ones() -> None:
    with pytest.raises(ProfileError, match=r"no such profile; allowed: .*cpu-small"):
        load_profile("tpu-huge")


def test_embedding_prefixes_are_read_from_a_profile(tmp_path: Path) -> None:
    path = write_profile(tmp_path, 'embedding_query_prefix = "query: "\nembedding_passage_prefix = ""\n')
    profile = load_profile(path)
    assert (profile.embedding_query_prefix, profile.embedding_passage_prefix) == ("query: ", "")


def test_an_embedding_prefix_must_be_a_string(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "embedding_query_prefix = 1\n")
    with pytest.raises(ProfileError, match=r"field 'embedding_query_prefix' = 1 is invalid; allowed: a string"):
        load_profile(path)


def test_the_multilingual_profile_is_never_picked_by_detection() -> None:
    profile = load_profile("cpu-multilingual")
    assert (profile.embedding_model, profile.embedding_query_prefix) == ("intfloat/multilingual-e5-small", "query: ")
    assert select_profile(SMALL_CPU).name == "cpu-small"
    assert select_profile(TINY_CPU).name == "cpu-tiny"


def test_name_defaults_to_the_file_name(tmp_path: Path) -> None:
    assert load_profile(write_profile(tmp_path, "", name="tiny-box")).name == "tiny-box"


@pytest.mark.parametrize(("hardware", "expected"), [
    (TINY_CPU, "cpu-tiny"),
    (dataclasses.replace(TINY_CPU, cpu_bf16=True), "cpu-tiny"),
    (SMALL_CPU, "cpu-small"),
    (dataclasses.replace(SMALL_CPU, cpu_bf16=True), "cpu-bf16"),
    (gpu(8.0), "gpu-small"),
    (gpu(80.0), "gpu-large"),
])
def test_selection_picks_the_best_fitting_profile(hardware: HardwareInfo, expected: str) -> None:
    assert select_profile(hardware).name == expected


def test_environment_override_wins(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="cogs.memory.runtime.profile"):
        profile = select_profile(gpu(80.0), override="cpu-small")
    assert profile.name == "cpu-small" and "MEMORY_PROFILE=cpu-small overrides detection" in caplog.text


def test_environment_override_may_be_a_file(tmp_path: Path) -> None:
    path = write_profile(tmp_path, 'dtype = "float32"\n', name="mine")
    assert select_profile(SMALL_CPU, override=str(path)).name == "mine"


def test_unknown_override_is_an_error() -> None:
    with pytest.raises(ProfileError, match=r"MEMORY_PROFILE: .*'tpu-huge' is not a profile"):
        select_profile(SMALL_CPU, override="tpu-huge")


def test_selection_logs_why_better_profiles_were_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="cogs.memory.runtime.profile"):
        select_profile(SMALL_CPU)
    assert "cpu-bf16: needs a CPU with native bf16" in caplog.text


def test_auto_device_prefers_cuda() -> None:
    assert resolve_device(MemoryProfile(name="x", device="auto"), gpu(8.0)) == "cuda"


def test_auto_device_falls_back_to_cpu() -> None:
    assert resolve_device(MemoryProfile(name="x", device="auto"), SMALL_CPU) == "cpu"


def test_profiles_are_found_from_any_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_profile("cpu-small").name == "cpu-small"


def test_unknown_provider_names_the_allowed_ones(tmp_path: Path) -> None:
    path = write_profile(tmp_path, '[reranker]\nprovider = "openai"\n')
    with pytest.raises(ProfileError, match=r"'reranker.provider' = 'openai' is invalid; allowed: local \| http \| none"):
        load_profile(path)


def test_zero_batch_size_is_rejected(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "[reranker]\nbatch_size = 0\n")
    with pytest.raises(ProfileError, match=r"'reranker.batch_size' = 0 is invalid; allowed: an integer >= 1"):
        load_profile(path)


def test_unknown_reranker_backend_names_the_allowed_ones(tmp_path: Path) -> None:
    path = write_profile(tmp_path, '[reranker]\nbackend = "tensorrt"\n')
    with pytest.raises(ProfileError,
                       match=r"'reranker.backend' = 'tensorrt' is invalid; allowed: auto \| onnx \| torch"):
        load_profile(path)


def test_reranker_backend_is_auto_and_int8_off_unless_set(tmp_path: Path) -> None:
    settings = load_profile(write_profile(tmp_path, "")).reranker
    assert (settings.backend, settings.int8) == ("auto", False)


def test_unknown_http_api_names_the_allowed_ones(tmp_path: Path) -> None:
    path = write_profile(tmp_path, '[reranker]\nhttp_api = "openai"\n')
    with pytest.raises(ProfileError, match=r"'reranker.http_api' = 'openai' is invalid; allowed: cohere \| tei"):
        load_profile(path)


def test_vnni_without_bf16_is_not_a_bf16_cpu() -> None:
    cpuinfo = "processor\t: 0\nflags\t\t: fpu avx2 avx_vnni\n"
    detector = HardwareDetector(cpuinfo=lambda: cpuinfo, ram_gb=lambda: 16.0, cores=lambda: 4,
                                cuda=lambda: (), mps=lambda: False)
    hardware = detector.detect()
    assert (hardware.cpu_features, hardware.cpu_bf16) == (("avx2", "avx_vnni"), False)
    assert select_profile(hardware).name == "cpu-small"


def test_the_chosen_profile_is_logged_with_the_cpu_features(caplog: pytest.LogCaptureFixture) -> None:
    detector = HardwareDetector(cpuinfo=lambda: CPUINFO_AVX2, ram_gb=lambda: 16.0, cores=lambda: 2,
                                cuda=lambda: (), mps=lambda: False)
    with caplog.at_level("INFO", logger="cogs.memory.runtime.profile"):
        select_profile(detector.detect())
    assert "cpu_features=avx2," in caplog.text


CHAIN = """[reranker]
time_budget_ms = 3000

[[reranker.providers]]
provider = "http"
http_url = "http://gpu-box:8080"
http_api = "tei"
timeout_ms = 1000

[[reranker.providers]]
provider = "local"
"""


def test_providers_are_read_in_the_order_listed(tmp_path: Path) -> None:
    assert provider_chain(load_profile(write_profile(tmp_path, CHAIN)).reranker) == (
        ProviderSettings("http", "http://gpu-box:8080", "tei", timeout_ms=1000), ProviderSettings("local"))


def test_an_http_provider_in_the_list_needs_its_url(tmp_path: Path) -> None:
    path = write_profile(tmp_path, CHAIN.replace('http_url = "http://gpu-box:8080"\n', ""))
    with pytest.raises(ProfileError, match=r"field 'reranker.providers\[0\].http_url' is required"):
        load_profile(path)


def test_a_provider_timeout_below_zero_names_its_entry(tmp_path: Path) -> None:
    path = write_profile(tmp_path, CHAIN.replace("timeout_ms = 1000", "timeout_ms = -1"))
    with pytest.raises(ProfileError, match=r"field 'reranker.providers\[0\].timeout_ms' = -1 is invalid"):
        load_profile(path)


def test_one_provider_and_a_provider_list_are_refused_together(tmp_path: Path) -> None:
    path = write_profile(tmp_path, CHAIN.replace("time_budget_ms = 3000", 'provider = "local"'))
    with pytest.raises(ProfileError, match=r"'reranker.provider' and \[\[reranker.providers\]\] both name providers"):
        load_profile(path)


def test_a_profile_without_a_list_has_its_one_provider(tmp_path: Path) -> None:
    settings = load_profile(write_profile(tmp_path, '[reranker]\nprovider = "none"\n')).reranker
    assert provider_chain(settings) == ()
