"""What the dashboard reads from a request: ids and numbers in ASCII digits only, anything else a 400 that says what
to fix (no traceback), through the query string, a form and a JSON body alike."""

from __future__ import annotations

import logging

import pytest

from cogs.memory.dashboard.params import BadParam, browse_limit, optional_id, required_id, settings_change
from tests.fixtures.dashboard import CHANNEL, GUILD, SignedIn, csrf_from

# Superscript two (isdigit() but not int()), Arabic-Indic three (int() reads 3), a full-width one, a negative, one past
# any 64-bit id, an empty value, and int()'s other leniencies: a sign, an underscore, inner spaces.
NOT_ASCII_DIGITS = ["²", "٣", "１", "-5", str(2**64), "1_000", "+5", "1 2", "12a"]


@pytest.mark.parametrize("raw", NOT_ASCII_DIGITS)
def test_an_id_in_anything_but_ascii_digits_is_a_bad_param(raw: str) -> None:
    with pytest.raises(BadParam, match=r"guild must be a Discord id \(a positive whole number in digits 0-9\)"):
        optional_id({"guild": raw}, "guild")


@pytest.mark.parametrize("raw", [*NOT_ASCII_DIGITS, "0", "101"])
def test_a_limit_in_anything_but_ascii_digits_from_1_to_100_is_a_bad_param(raw: str) -> None:
    with pytest.raises(BadParam, match="limit must be a whole number from 1 to 100 in digits 0-9"):
        browse_limit({"limit": raw})


@pytest.mark.parametrize("raw", NOT_ASCII_DIGITS)
def test_retention_days_in_anything_but_ascii_digits_is_a_bad_param(raw: str) -> None:
    with pytest.raises(BadParam, match="retention_days must be a whole number from 0"):
        settings_change({"retention_days": raw})


def test_ascii_digits_are_read_and_an_empty_value_is_no_value() -> None:
    assert (optional_id({"guild": " 456 "}, "guild"), optional_id({"guild": ""}, "guild")) == (456, None)
    assert (browse_limit({"limit": "7"}), browse_limit({"limit": ""}), browse_limit({})) == (7, 50, 50)
    assert settings_change({"retention_days": "0"}).retention_days == 0
    assert required_id({"guild_id": 2**63 - 1}, "guild_id") == 2**63 - 1  # a JSON number is read as its digits
    with pytest.raises(BadParam, match="guild is required"):
        required_id({"guild": ""}, "guild")


@pytest.mark.parametrize("value", ["%C2%B2", "%D9%A3", "%EF%BC%91", "-1", str(2**63), str(2**70)])
async def test_a_limit_or_id_in_other_digits_is_a_400_not_a_500(client: SignedIn, value: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    for path in (f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit={value}",
                 f"/api/browse?guild={value}&channel={CHANNEL}", f"/browse?guild={GUILD}&channel={CHANNEL}&limit={value}",
                 f"/api/search?q=picnic&guild={GUILD}&limit={value}"):
        async with client.http.get(client.url(path)) as response:
            assert response.status == 400, (path, response.status)
            assert "digits 0-9" in await response.text()
    assert "Traceback" not in caplog.text and not [record for record in caplog.records if record.exc_info]


@pytest.mark.parametrize("guild_id", ["٤٥٦", -456, 2**64, 4.5, True, ""])
async def test_a_json_body_with_an_id_in_other_digits_or_types_is_a_400(client: SignedIn, guild_id: object) -> None:
    async with client.http.post(client.url("/api/settings"), json={"guild_id": guild_id, "retention_days": 5},
                                headers={"X-CSRF-Token": client.csrf}) as response:
        assert response.status == 400
        assert "guild_id" in (await response.json())["error"]


async def test_a_form_with_retention_days_in_other_digits_is_a_400(client: SignedIn) -> None:
    async with client.http.get(client.url(f"/controls?guild={GUILD}")) as response:
        csrf = csrf_from(await response.text())
    form = {"guild": str(GUILD), "retention_days": "٣٠", "csrf_token": csrf}
    async with client.http.post(client.url("/controls/settings"), data=form) as response:
        assert response.status == 400
        assert "retention_days must be a whole number" in await response.text()
