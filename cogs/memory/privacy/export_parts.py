"""The export's files, written a record at a time (no part is ever held in memory whole): each part a zip of one JSON
document (docs/privacy.md, "The export's schema") and an HTML copy, every text escaped; a new part begins before one
would pass the size limit, which is judged on the text compressed as the zip compresses it (a part of text holds
some 4 times its size). Plain file work: the caller runs it off the event loop."""

from __future__ import annotations

import html
import json
import zipfile
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal

__all__ = ("PartWriter", "iso")

Section = Literal["messages", "quotations"]
# Room kept in each part for what deflate holds back before it writes (under 64 KiB: its window and buffers), the
# closing lines and the zip's own headers.
PART_RESERVE = 128 * 1024
HTML_HEAD = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
             '<style>body{{font-family:sans-serif}}td{{vertical-align:top;padding:2px 8px}}</style></head><body>\n'
             '<h1>{title}</h1>\n')
SECTION_HEADS = {"messages": "<h2>Your messages</h2>\n<table><tr><th>When (UTC)</th><th>Channel</th><th>Text</th>"
                             "<th>Edited</th><th>Reply to (id)</th></tr>\n",
                 "quotations": "<h2>Where your messages were shown to others</h2>\n<table><tr><th>When (UTC)</th>"
                               "<th>Message (id)</th><th>How</th><th>Answer</th></tr>\n"}


def iso(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()


def _deflater() -> Any:
    """What zipfile's ZIP_DEFLATED compresses with (its default level, a raw stream)."""
    return zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)


def _cell(value: object) -> str:
    return f"<td>{html.escape('' if value is None else str(value))}</td>"


class PartWriter:
    """Writes parts ``<stem>-partN.zip`` into ``directory``; ``header(number)`` is each part's opening fields, and
    ``summary_html`` the first part's readable summary."""

    def __init__(self, directory: Path, stem: str, limit: int, header: Callable[[int], dict[str, Any]],
                 title: str, summary_html: str) -> None:
        if limit <= 2 * PART_RESERVE:
            raise ValueError(f"a part limit of {limit} bytes leaves no room for messages")
        self._directory, self._stem, self._budget = directory, stem, limit - PART_RESERVE
        self._header, self._title, self._summary = header, title, summary_html
        self.parts: list[Path] = []
        self._json: BinaryIO | None = None
        self._html: BinaryIO | None = None
        self._size = 0  # bytes of the part's two files compressed so far (zipfile's deflate, the same output)
        self._deflaters = (_deflater(), _deflater())
        self._items = 0
        self._section: Section = "messages"

    def add(self, section: Section, record: dict[str, Any], row: tuple[object, ...]) -> None:
        """One record of ``section`` (sections come in order: messages, then quotations) and its HTML row."""
        encoded = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
        cells = ("<tr>" + "".join(_cell(value) for value in row) + "</tr>\n").encode()
        if self._json is not None and self._items and self._size + len(encoded) + len(cells) > self._budget:
            self._close_part(last=False)
        if self._json is None:
            self._open_part()
        if section != self._section:
            self._switch(section)
        self._write((b"," if self._items else b"") + encoded, cells)
        self._items += 1

    def finish(self) -> list[Path]:
        """Close the last part (an empty one if nothing was added: the header alone) and return every part."""
        if self._json is None:
            self._open_part()
        self._close_part(last=True)
        return self.parts

    def _write(self, json_bytes: bytes, html_bytes: bytes) -> None:
        assert self._json is not None and self._html is not None
        self._json.write(json_bytes)
        self._html.write(html_bytes)
        self._size += len(self._deflaters[0].compress(json_bytes)) + len(self._deflaters[1].compress(html_bytes))

    def _raw(self, suffix: str) -> Path:
        return self._directory / f"{self._stem}-part{len(self.parts) + 1}.{suffix}"

    def _open_part(self) -> None:
        number = len(self.parts) + 1
        self._json, self._html = self._raw("json").open("wb"), self._raw("html").open("wb")
        self._size, self._items, self._deflaters = 0, 0, (_deflater(), _deflater())
        header = json.dumps(self._header(number), ensure_ascii=False, separators=(",", ":"))
        title = html.escape(f"{self._title} (part {number})")
        self._write(header[:-1].encode() + b',"messages":[',
                    (HTML_HEAD.format(title=title) + (self._summary if number == 1 else "")
                     + SECTION_HEADS["messages"]).encode())
        if self._section == "quotations":
            self._section = "messages"
            self._switch("quotations")

    def _switch(self, section: Section) -> None:
        self._write(f'],"{section}":['.encode(), ("</table>\n" + SECTION_HEADS[section]).encode())
        self._section, self._items = section, 0

    def _close_part(self, *, last: bool) -> None:
        if self._section == "messages":
            self._write(b'],"quotations":[', b"")
        self._write(f'],"last_part":{json.dumps(last)}}}'.encode(), b"</table>\n</body></html>\n")
        assert self._json is not None and self._html is not None
        for handle in (self._json, self._html):
            handle.close()
        raw_json, raw_html = self._raw("json"), self._raw("html")
        part = self._raw("zip")
        with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.write(raw_json, "memory.json")
            archive.write(raw_html, "memory.html")
        raw_json.unlink()
        raw_html.unlink()
        if part.stat().st_size > self._budget + PART_RESERVE:  # never sent: the estimate above failed
            raise RuntimeError(f"export part {part.name} came out larger than its limit")
        self.parts.append(part)
        self._json = self._html = None
