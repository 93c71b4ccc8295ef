"""What memory keeps of a message's text: cleaned of what SQLite and the tokenizer refuse, capped, with stand-ins for
attachments."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ("ATTACHMENT_PREFIX", "MAX_CONTENT_CHARS", "clean_text", "edited_content", "stand_ins", "stored_content")

# Marks an attachment/embed stand-in line in stored content, so an edit of the text keeps the stand-ins.
ATTACHMENT_PREFIX = "📎 "
# Discord allows 4,000 characters; imports may carry more. Anything past this is not worth a vector.
MAX_CONTENT_CHARS = 6_000
# Unicode category Cc (C0, DEL, C1) except tab and newline; "\r\n" becomes "\n" first.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean_text(value: str) -> str:
    """Text SQLite and the tokenizer accept: lone surrogates become U+FFFD, NUL/control characters go."""
    value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _CONTROLS.sub("", value.replace("\r\n", "\n"))


def stored_content(content: str, attachments: Iterable[str] = ()) -> str:
    """The text memory stores and indexes for a message; empty when there is nothing to remember."""
    body = clean_text(content).strip()[:MAX_CONTENT_CHARS]
    cleaned = [clean_text(item).strip() for item in attachments]
    lines = [body] if body else []
    lines += [ATTACHMENT_PREFIX + " ".join(item.split())[:200] for item in cleaned if item]
    return "\n".join(lines)


def stand_ins(content: str) -> list[str]:
    """The attachment stand-ins of stored content, without their prefix."""
    return [line[len(ATTACHMENT_PREFIX):] for line in content.split("\n") if line.startswith(ATTACHMENT_PREFIX)]


def edited_content(content: str, current: str) -> str:
    """The text stored after an edit to ``content`` of a message stored as ``current``: an edit changes the words,
    the attachment stand-ins stay."""
    return stored_content(content, stand_ins(current))
