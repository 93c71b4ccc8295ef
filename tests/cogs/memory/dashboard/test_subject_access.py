"""The dashboard's subject access request over a real Memory on either store: counts for one member (their channels,
opt-out, how often they were quoted, never the log's entries), escaped; and the member's export as a download, which
needs the session's CSRF token like every other change."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogs.memory.memory import Memory
from cogs.memory.records import Hit
from tests.fixtures.core import RecordFactory
from tests.fixtures.dashboard import SignedIn, signed_in_over, csrf_from

MEMBER = 100


@pytest.fixture
async def client(any_memory: Memory, make_record: RecordFactory, tmp_path: Path) -> AsyncIterator[SignedIn]:
    await any_memory.add(make_record(1, "my <script>alert(1)</script> plan", author_id=MEMBER))
    await any_memory.add(make_record(2, "their words", author_id=200))
    await any_memory.flush()
    first = make_record(1, "")
    any_memory.quotations.note([Hit(1, 1, 10, MEMBER, "alice", "", first.created_at, 1.0, ("keyword",), 1)], "search",
                               200)
    await any_memory.quotations.flush()
    async with signed_in_over(any_memory, tmp_path) as signed_in:
        yield signed_in


async def test_the_page_counts_what_memory_holds_of_a_member(client: SignedIn) -> None:
    async with client.http.get(client.url("/subject-access"), params={"guild": "1", "member": str(MEMBER)}) as page:
        html = await page.text()
    assert page.status == 200
    assert "<li>search: 1</li>" in html and "<td>1</td>" in html and "Opted out: no" in html
    assert "alert(1)" not in html  # counts only: no message text, no log entry


async def test_the_download_is_the_members_export_and_needs_the_csrf_token(client: SignedIn) -> None:
    async with client.http.get(client.url("/subject-access"), params={"guild": "1", "member": str(MEMBER)}) as page:
        token = csrf_from(await page.text())
    form = {"guild": "1", "member": str(MEMBER)}
    async with client.http.post(client.url("/subject-access/export"), data=form) as refused:
        refused_status = refused.status
    async with client.http.post(client.url("/subject-access/export"), data={**form, "csrf_token": token}) as download:
        body = await download.read()
        disposition = download.headers["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        document = json.loads(archive.read("memory.json"))
    assert (refused_status, disposition) == (403, f'attachment; filename="memory-export-1-{MEMBER}-part1.zip"')
    assert [m["content"] for m in document["messages"]] == ["my <script>alert(1)</script> plan"]
    assert [q["kind"] for q in document["quotations"]] == ["search"]


async def test_a_member_memory_holds_nothing_of_gets_no_download(client: SignedIn) -> None:
    async with client.http.get(client.url("/subject-access"), params={"guild": "1", "member": "999"}) as page:
        token = csrf_from(await page.text())
    async with client.http.post(client.url("/subject-access/export"),
                                data={"guild": "1", "member": "999", "csrf_token": token}) as download:
        assert download.status == 404
