"""What may be shown: a value without its credentials, in every form one takes, and a name from data with its control
characters escaped."""

from __future__ import annotations

import pytest

from cogs.memory.runtime.safe_text import redacted, redacted_text, shown_value, terminal_text


@pytest.mark.parametrize(("value", "shown"), [
    ("https://bot:hunter2@llm.example.org/v1", "https://bot:***@llm.example.org/v1"),
    ("htps://sk-hunter2@llm.example.org", "htps://***@llm.example.org"),  # a user alone may be a token
    ("postgresql://bot:hunter2@db:5432/memory?sslmode=require&password=hunter2#x",
     "postgresql://bot:***@db:5432/memory?sslmode=require&password=***"),
    ("http://llm.example.org/v1?token=hunter2&api_key=hunter2", "http://llm.example.org/v1?token=***&api_key=***"),
    ("postgresql://bot:hun/ter2@db/memory", "postgresql://bot:***@db/memory"),  # a / the URL should have escaped
    ("postgresql://bot:hunter2/memory", "postgresql://bot:***/memory"),  # the @ forgotten: the "port" is hidden
    ("postgresql://bot@[::1]:5432,db2:5433/memory", "postgresql://***@[::1]:5432,db2:5433/memory"),
    ("host=db port=5432 dbname=memory user=bot password=hunter2 sslpassword='hun ter2'",
     "host=db port=5432 dbname=memory user=bot password=*** sslpassword=***"),
    ("bot:hunter2@db.example.org:5432", "***@db.example.org:5432"),  # no scheme
    ("aHVudGVyMg==", "***=***"),  # a base64 token is no keyword list
])
def test_a_value_is_shown_without_its_credentials(value: str, shown: str) -> None:
    assert redacted(value) == shown


@pytest.mark.parametrize("value", ["hunter2", "sk-proj-hunter2", "localhost:11434", ""])
def test_a_bare_token_is_not_shown_at_all(value: str) -> None:
    assert redacted(value) is None


def test_a_settings_value_is_hidden_whole_only_where_it_may_be_a_key() -> None:
    assert shown_value("sk-hunter2", credentials=True) == "a value without scheme:// (not shown: it may be a key)"
    assert shown_value("myserver", credentials=False) == "'myserver'"
    assert shown_value("htps://bot:hunter2@host", credentials=False) == "'htps://bot:***@host'"


def test_the_urls_and_passwords_in_free_text_are_redacted() -> None:
    words = ("407, message='Proxy Authentication Required', url='http://bot:hunter2@127.0.0.1:3128' "
             "(password=hunter2, api_key: none, token = hunter2)")
    assert redacted_text(words) == ("407, message='Proxy Authentication Required', "
                                    "url='http://bot:***@127.0.0.1:3128' (password=***, api_key: none, token = ***)")


def test_a_password_in_a_url_read_as_a_path_is_redacted_too() -> None:
    words = "https:/admin:hunter2@profiles.example.org/big.toml: no such profile; at 12:30 bot@host said so"
    assert redacted_text(words) == ("https:/admin:***@profiles.example.org/big.toml: no such profile; at 12:30 "
                                    "bot@host said so")


@pytest.mark.parametrize(("name", "shown"), [
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
    ("general\r\nerror: forged", "general\\r\\nerror: forged"),
    ("\u202eelif.exe\u2066x\u2069", "\\u202eelif.exe\\u2066x\\u2069"),
    ("\x9b31m\x7f\x00\t", "\\x9b31m\\x7f\\x00\\t"),  # C1's CSI, DEL, NUL, a tab
    ("a\ud800b", "a\\ud800b"),  # a lone surrogate (valid JSON) cannot even be written to a UTF-8 terminal
    ("line\u2028next", "line\\u2028next"),
])
def test_control_characters_are_shown_as_escapes(name: str, shown: str) -> None:
    assert terminal_text(name) == shown


def test_printable_names_are_left_alone() -> None:
    name = "Café 🎉 #général — 👩‍👩‍👧 日本語 עברית"  # an emoji family joined by ZWJ stays one emoji
    assert terminal_text(name) == name
