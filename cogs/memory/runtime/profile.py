"""Hardware profiles that size the memory system: loading `profiles/*.toml` and choosing the one this machine fits
(hardware.py reads the machine)."""

from __future__ import annotations

import dataclasses
import logging
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import DEVICES, DTYPES, PROFILES_DIR
from .hardware import HardwareDetector, HardwareInfo
from ..language.coverage import SCRIPTS
from .ranking import RankingTuning

log = logging.getLogger(__name__)

PROFILE_ENV_VAR = "MEMORY_PROFILE"

PROVIDERS = ("local", "http", "none")
# Who runs a local reranker: "auto" = ONNX Runtime for float32 on a CPU when it is installed, torch otherwise.
BACKENDS = ("auto", "onnx", "torch")
# Request/response shapes of the http provider: Cohere/Jina/vLLM `/v1/rerank`, text-embeddings-inference `/rerank`.
HTTP_APIS = ("cohere", "tei")
# CPU precisions a reranker may be measured in (`precisions`); float32 is the reference.
# "openvino-*": the ONNX export compiled by OpenVINO (rerank/openvino.py), bf16 compute on the float32 or int8 export.
OPENVINO_PRECISIONS = ("openvino-int8", "openvino-bf16")
RERANKER_PRECISIONS = (*OPENVINO_PRECISIONS, "int8", "bf16", "float32")


class ProfileError(ValueError):
    """A profile file or value is invalid; the message names the file, the field and what is allowed."""


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """One entry of `[[reranker.providers]]`: who scores, tried in the listed order until one answers."""

    provider: str = "local"
    http_url: str | None = None
    http_api: str = "cohere"
    model: str | None = None  # None = reranker.model (for "http": the model name sent to the server)
    timeout_ms: int = 0  # this provider's share of the budget; 0 = whatever the recall's budget has left


@dataclass(frozen=True, slots=True)
class RerankerSettings:
    enabled: bool = True
    provider: str = "local"
    model: str = "Qwen/Qwen3-Reranker-0.6B"
    http_url: str | None = None
    http_api: str = "cohere"
    backend: str = "auto"
    int8: bool = False  # ONNX Runtime only: int8 weights (dynamic, per channel); faster, not exact
    # CPU precisions the bot may choose from, measured once per machine (rerank/precision.py); () = float32, or int8
    # where `int8` says so. The fastest within the fidelity bars of float32 runs.
    precisions: tuple[str, ...] = ()
    batch_size: int = 8
    max_length: int = 512
    candidates: int = 20
    # With measured precisions: up to this many candidates where the measured speed fits them in the time budget
    # (0 = always `candidates`).
    max_candidates: int = 0
    top_k: int = 5
    min_score: float = 0.0
    time_budget_ms: int = 3000
    instruction: str | None = None  # None = the built-in chat-memory instruction
    preload: bool = False
    cache_size: int = 4096
    # Providers tried in order (e.g. a shared server, then the local model); empty = the single provider above.
    providers: tuple[ProviderSettings, ...] = ()


def provider_chain(settings: RerankerSettings) -> tuple[ProviderSettings, ...]:
    """The providers a recall tries, in order; none when reranking is off."""
    if not settings.enabled:
        return ()
    chain = settings.providers or (ProviderSettings(settings.provider, settings.http_url, settings.http_api),)
    return tuple(p for p in chain if p.provider != "none")


@dataclass(frozen=True, slots=True)
class ProfileRequirements:
    """What a machine needs for `select_profile` to consider this profile; `rank` orders the ones that fit."""

    rank: int = 0
    min_cores: int = 1
    min_ram_gb: float = 0.0
    cpu_bf16: bool = False
    min_gpu_memory_gb: float = 0.0  # > 0 means a CUDA device with at least this much total memory


@dataclass(frozen=True, slots=True)
class MemoryProfile:
    name: str
    description: str = ""
    device: str = "auto"
    dtype: str = "float32"
    embedding_model: str = "all-MiniLM-L6-v2"
    # Text the model reads before a search query / a stored message; None = the known one for the model's name
    # (embedding.KNOWN_PREFIXES: E5 "query: " / "passage: "), "" = none.
    embedding_query_prefix: str | None = None
    embedding_passage_prefix: str | None = None
    # The scripts the embedding model reads ("latin" or "all"); None = known from its name (coverage.LATIN_ONLY:
    # all-MiniLM-L6-v2 is "latin"), else "all". Hybrid search leans on keywords for what the model cannot read.
    embedding_scripts: str | None = None
    embedding_batch_size: int = 32
    vector_candidates: int = 50
    keyword_candidates: int = 50
    search_limit: int = 10
    ingest_batch_size: int = 64
    ingest_queue_size: int = 10_000
    reranker: RerankerSettings = field(default_factory=RerankerSettings)
    requirements: ProfileRequirements = field(default_factory=ProfileRequirements)
    ranking: RankingTuning = field(default_factory=RankingTuning)  # [ranking]: the first stage's weights and budgets


# --- loading ---------------------------------------------------------------------------------------------------

_CHOICES: dict[str, tuple[str, ...]] = {"device": DEVICES, "dtype": DTYPES, "provider": PROVIDERS,
                                         "backend": BACKENDS, "http_api": HTTP_APIS,
                                         "embedding_scripts": SCRIPTS}
_POSITIVE = frozenset({"embedding_batch_size", "search_limit", "ingest_batch_size", "ingest_queue_size",
                       "batch_size", "max_length", "top_k", "min_cores", "reply_window", "context_sources",
                       "keyword_max_postings", "keyword_max_terms", "vector_overfetch", "structure_messages"})
_NON_NEGATIVE = frozenset({"vector_candidates", "keyword_candidates", "candidates", "time_budget_ms", "cache_size",
                           "min_ram_gb", "min_gpu_memory_gb", "timeout_ms", "context_weight", "next_context_weight",
                           "answer_context_weight", "body_weight", "author_weight", "structure_refresh_s",
                           "informative_from", "informative_full_at", "max_candidates", "keyword_coordination"})
# Arrays of strings, and the strings each may hold.
_STRING_ARRAYS: dict[str, tuple[str, ...]] = {"precisions": RERANKER_PRECISIONS}
# Shares: a number from 0 to 1.
_SHARES = frozenset({"min_score", "vector_weight", "min_covered_share", "dialogue_full_at"})
# Fields that hold an array of tables ([[reranker.providers]]), and what each table becomes.
_TABLE_ARRAYS: dict[str, type] = {"providers": ProviderSettings}
_SINGLE_PROVIDER_FIELDS = ("provider", "http_url", "http_api")


def _type_name(annotation: Any) -> str:
    return str(annotation).replace("NoneType", "None")


def _check_value(source: str, qualified: str, value: Any, annotation: str) -> Any:
    key = qualified.rpartition(".")[2]

    def fail(allowed: str) -> ProfileError:
        return ProfileError(f"{source}: field {qualified!r} = {value!r} is invalid; allowed: {allowed}")

    base = annotation.replace(" | None", "")
    if value is None and "None" not in annotation:
        raise fail(_type_name(annotation))
    if value is not None:
        if base == "bool" and not isinstance(value, bool):
            raise fail("true or false")
        if base == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise fail("an integer")
        if base == "float":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise fail("a number")
            value = float(value)
        if base == "str" and not isinstance(value, str):
            raise fail("a string")
        if base == "tuple[str, ...]":
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise fail("an array of strings")
            allowed = _STRING_ARRAYS.get(key)
            if allowed is not None and (wrong := [item for item in value if item not in allowed]):
                raise ProfileError(f"{source}: field {qualified!r} holds {wrong[0]!r}; allowed: {' | '.join(allowed)}")
            value = tuple(value)
    if key in _CHOICES and value is not None and value not in _CHOICES[key]:
        raise fail(" | ".join(_CHOICES[key]))
    if key in _POSITIVE and value < 1:
        raise fail("an integer >= 1")
    if key in _NON_NEGATIVE and value < 0:
        raise fail("a number >= 0")
    if key in _SHARES and not 0.0 <= value <= 1.0:
        raise fail("a number in [0, 1]")
    return value


def _build(cls: type, source: str, prefix: str, data: Mapping[str, Any], nested: Mapping[str, type]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        qualified = f"{prefix}{key}"
        if key not in fields:
            raise ProfileError(f"{source}: unknown field {qualified!r}; allowed: {', '.join(sorted(fields))}")
        if key in nested:
            if not isinstance(value, Mapping):
                raise ProfileError(f"{source}: field {qualified!r} must be a table ([{qualified}])")
            kwargs[key] = _build(nested[key], source, f"{qualified}.", value, {})
        elif key in _TABLE_ARRAYS:
            if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
                raise ProfileError(f"{source}: field {qualified!r} must be an array of tables ([[{qualified}]])")
            kwargs[key] = tuple(_build(_TABLE_ARRAYS[key], source, f"{qualified}[{i}].", item, {})
                                for i, item in enumerate(value))
        else:
            kwargs[key] = _check_value(source, qualified, value, str(fields[key].type))
    missing = [name for name, f in fields.items() if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and name not in kwargs]
    if missing:
        raise ProfileError(f"{source}: missing required field {prefix}{missing[0]!r}")
    return cls(**kwargs)


def parse_profile(data: Mapping[str, Any], source: str = "<profile>") -> MemoryProfile:
    """Validate a TOML-shaped mapping into a MemoryProfile; errors name `source`, the field and what is allowed."""
    nested = {"reranker": RerankerSettings, "requirements": ProfileRequirements, "ranking": RankingTuning}
    profile: MemoryProfile = _build(MemoryProfile, source, "", data, nested)
    settings = profile.reranker
    if settings.providers and (both := [k for k in _SINGLE_PROVIDER_FIELDS if k in data.get("reranker", {})]):
        raise ProfileError(f"{source}: field 'reranker.{both[0]}' and [[reranker.providers]] both name providers; "
                           "keep one of them")
    if settings.enabled and settings.provider == "http" and not settings.http_url:
        raise ProfileError(f"{source}: field 'reranker.http_url' is required when reranker.provider = 'http'")
    for i, entry in enumerate(settings.providers):
        if entry.provider == "http" and not entry.http_url:
            raise ProfileError(f"{source}: field 'reranker.providers[{i}].http_url' is required when its "
                               "provider = 'http'")
    return profile


def reranks(profile: MemoryProfile) -> bool:
    """Whether recall runs a second stage with this profile."""
    return bool(provider_chain(profile.reranker))


def load_profile(name_or_path: str | Path, profiles_dir: Path = PROFILES_DIR) -> MemoryProfile:
    """Load `profiles/NAME.toml` (or an explicit .toml path) into a frozen MemoryProfile."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = profiles_dir / f"{name_or_path}.toml"
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        known = ", ".join(p.stem for p in sorted(profiles_dir.glob("*.toml")))
        raise ProfileError(f"{path}: no such profile; allowed: {known}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML ({exc})") from None
    data.setdefault("name", path.stem)
    return parse_profile(data, str(path))


def list_profiles(profiles_dir: Path = PROFILES_DIR) -> list[MemoryProfile]:
    return [load_profile(path) for path in sorted(profiles_dir.glob("*.toml"))]


# --- selection -------------------------------------------------------------------------------------------------

def _misfit(profile: MemoryProfile, hw: HardwareInfo) -> str | None:
    """Why `profile` does not fit `hw`, or None when it does."""
    req = profile.requirements
    if hw.cpu_cores < req.min_cores:
        return f"needs {req.min_cores} cores, has {hw.cpu_cores}"
    if hw.ram_gb < req.min_ram_gb:
        return f"needs {req.min_ram_gb:g} GiB RAM, has {hw.ram_gb:.1f}"
    if req.cpu_bf16 and not hw.cpu_bf16:
        return "needs a CPU with native bf16 (avx512_bf16/amx_bf16)"
    if req.min_gpu_memory_gb > 0:
        best = max((d.total_memory_gb for d in hw.cuda_devices), default=0.0)
        if best < req.min_gpu_memory_gb:
            return f"needs a CUDA GPU with {req.min_gpu_memory_gb:g} GiB, best has {best:.1f}"
    return None


def choose_profile(
    hardware: HardwareInfo, profiles: list[MemoryProfile], override: str | None = None
) -> tuple[MemoryProfile, str]:
    """Pick (profile, reason): the override if given, else the highest-ranked profile the hardware fits."""
    if override:
        for profile in profiles:
            if profile.name == override:
                return profile, f"{PROFILE_ENV_VAR}={override} overrides detection"
        raise ProfileError(f"{PROFILE_ENV_VAR}: field 'name' = {override!r} is not a profile; "
                           f"allowed: {', '.join(p.name for p in profiles)}")
    fitting = [p for p in profiles if _misfit(p, hardware) is None]
    if not fitting:
        raise ProfileError(f"no profile fits this machine ({hardware}); add one with lower [requirements]")
    best = max(fitting, key=lambda p: p.requirements.rank)
    skipped = "; ".join(f"{p.name}: {_misfit(p, hardware)}" for p in profiles
                        if p.requirements.rank > best.requirements.rank and _misfit(p, hardware))
    reason = (f"best fit for {hardware.cpu_cores} cores, {hardware.ram_gb:.1f} GiB RAM, "
              f"cpu_bf16={hardware.cpu_bf16}, cpu_features={','.join(hardware.cpu_features) or 'none listed'}, "
              f"cuda={[d.name for d in hardware.cuda_devices]}, mps={hardware.mps}")
    return best, reason + (f" (skipped {skipped})" if skipped else "")


def select_profile(
    hardware: HardwareInfo | None = None,
    *,
    profiles_dir: Path = PROFILES_DIR,
    override: str | None = None,
) -> MemoryProfile:
    """The profile to run with: ``override`` (the ``MEMORY_PROFILE`` setting: a name or a .toml path) if given, else
    the best fit; logged."""
    if override and override.endswith(".toml"):
        profile = load_profile(override, profiles_dir)
        log.info("memory profile %s: %s=%s overrides detection", profile.name, PROFILE_ENV_VAR, override)
        return profile
    hardware = hardware or HardwareDetector().detect()
    profile, reason = choose_profile(hardware, list_profiles(profiles_dir), override)
    log.info("memory profile %s: %s", profile.name, reason)
    return profile


def resolve_device(profile: MemoryProfile, hardware: HardwareInfo | None = None) -> str:
    """Turn device "auto" into "cuda", "mps" or "cpu" for this machine (probed when ``hardware`` is None; blocking)."""
    if profile.device != "auto":
        return profile.device
    hardware = hardware or HardwareDetector().detect()
    if hardware.cuda_devices:
        return "cuda"
    return "mps" if hardware.mps else "cpu"
