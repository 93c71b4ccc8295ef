"""What to tell an admin, in one line, when a reranker model cannot load: what went wrong (not in the Hugging Face
cache and not downloadable, no such folder or model) and what to do (allow network once, an offline cache, a local
path in the profile, a profile without the reranker)."""

from __future__ import annotations

from pathlib import Path

from ..runtime.config import PROFILES_DIR
from ..runtime.profile import MemoryProfile, ProfileError, list_profiles, reranks

__all__ = ("UNAVAILABLE", "load_failure")

# What the bot and the CLI say before ``load_failure``'s words when the profile's reranker cannot load: they go on,
# with recalls in first-stage order.
UNAVAILABLE = "reranker unavailable, recalls keep first-stage order"


def load_failure(model: str, error: BaseException, profile: MemoryProfile,
                 profiles_dir: Path = PROFILES_DIR) -> str:
    """One line: why ``model`` (``profile``'s reranker) could not load, and what to do about it."""
    from huggingface_hub import constants
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError, RepositoryNotFoundError

    causes = _chain(error)
    where = _profile_file(profile, profiles_dir)
    in_profile = f"in {where}, put a local folder holding the model in [reranker] model (or enabled = false there)"
    if any(isinstance(cause, LocalEntryNotFoundError) for cause in causes):
        if constants.is_offline_mode():
            why = (f"{model} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and HF_HUB_OFFLINE=1 "
                   "forbids downloading it")
            fixes = ["unset HF_HUB_OFFLINE and allow network access once (the model is then cached), or point "
                     "HF_HOME at a cache that has it"]
        else:
            why = (f"{model} could not be downloaded (huggingface.co cannot be reached) and is not in the Hugging "
                   f"Face cache ({constants.HF_HUB_CACHE})")
            fixes = ["allow network access to huggingface.co once (the model is then cached), or set "
                     "HF_HUB_OFFLINE=1 and point HF_HOME at a cache that has it"]
        fixes.append(in_profile)
    elif any(isinstance(cause, HFValidationError) for cause in causes):
        why = f"{model} is neither a folder on this machine nor a model name of the Hugging Face hub"
        fixes = [f"in {where}, put an existing folder or a hub model name in [reranker] model (or enabled = false)"]
    elif any(isinstance(cause, RepositoryNotFoundError) for cause in causes):
        why = f"{model} is not a model of the Hugging Face hub (or it is private or gated)"
        fixes = [f"in {where}, put a hub model name or a local folder in [reranker] model (or enabled = false)"]
    else:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        why = f"cannot load {model}: {type(error).__name__}" + (f": {first_line}" if first_line else "")
        fixes = [f"in {where}, set enabled = false under [reranker] to run without it"]
    other = _profile_without_reranker(profile, profiles_dir)
    if other is not None:
        fixes.append(other)
    return f"{why}; to fix it: " + "; or ".join(fixes)


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and the errors it was raised from (transformers wraps the hub's errors in an OSError)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _profile_file(profile: MemoryProfile, profiles_dir: Path) -> str:
    path = profiles_dir / f"{profile.name}.toml"
    if path.is_file():
        return f"{profiles_dir.name}/{path.name}" if profiles_dir == PROFILES_DIR else str(path)
    return f"profile {profile.name}'s .toml file"


def _profile_without_reranker(profile: MemoryProfile, profiles_dir: Path) -> str | None:
    """Choosing a profile that has no reranker, named; None when there is none."""
    try:
        plain = [other for other in list_profiles(profiles_dir) if not reranks(other)]
    except (OSError, ProfileError):  # a broken profile file must not hide the rest of the advice
        return None
    if not plain:
        return None
    choice = plain[0]
    note = ("; it embeds with another model, so every message is embedded again"
            if choice.embedding_model != profile.embedding_model else "")
    return (f"choose {choice.name}, a profile without the reranker (MEMORY_PROFILE, --profile or /memory profile "
            f"set{note})")
