"""Text that is safe to show: a setting's value without its credentials (errors and logs never hold a password, a
key or a token), and a name from data with its control characters escaped (a terminal shows it, never obeys it)."""

from __future__ import annotations

import re

__all__ = ("HIDDEN", "redacted", "redacted_text", "shown_value", "terminal_text")

HIDDEN = "***"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# A URL inside free text (an exception's words) ends at a space or a quote.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")
# libpq's keyword form (host=db password='a b'): a keyword, =, and a word or a quoted value.
_KEYWORD = re.compile(r"([A-Za-z_]\w*)\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)")
# Keywords and query parameters whose values are no secret; every other value is hidden.
_PLAIN_NAMES = frozenset({"host", "hostaddr", "port", "dbname", "database", "user", "sslmode", "connect_timeout",
                          "application_name", "target_session_attrs", "load_balance_hosts"})
# libpq's other keywords: shown with their values hidden.
_SECRET_NAMES = frozenset({"password", "passfile", "sslpassword", "sslkey", "sslcert", "sslrootcert", "sslcrl",
                           "service", "options", "krbsrvname", "gsslib", "channel_binding", "requirepeer"})
# In free text, a name=value whose value is a credential (up to a space, a quote or an &; punctuation that ends a
# clause is not the value's).
_SECRET_PAIR = re.compile(r"(?i)\b(password|passwd|pwd|sslpassword|token|secret|api[_-]?key|access[_-]?key)"
                          r"(\s*=\s*)('(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s&'\"]+?(?=[,;)\]]*(?:[\s&'\"]|$)))")
# A user:password@ left in text without its URL's "//": a URL read as a path ("https:/bot:pw@host/x.toml").
_USERINFO_IN_TEXT = re.compile(r"([\w.~%+-]+):[^\s/@'\"<>]+@")
# C0 and C1 controls and DEL (escape sequences, CR, LF), the bidirectional marks, embeddings, overrides and isolates
# (text shown in another order than it is read), the line and paragraph separators, and lone surrogates (which a
# UTF-8 terminal cannot even be sent).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def redacted(value: str) -> str | None:
    """``value`` (a URL, a DSN, a token) as an error may show it, or None when none of it may be shown.

    A URL keeps its scheme, user, hosts, numeric ports and path, and hides its password (``user:***@``; a user
    without a password may be a token: ``***@``), its query's values but a few (``?sslmode=require&password=***``)
    and its fragment. Everything before the last ``@`` counts as the user: a password holding a ``/`` is hidden too.
    libpq's keyword form keeps its plain keywords' values (``host=db password=***``); ``user:pass@host`` without a
    scheme keeps ``***@host``. Anything else (a bare token, a word) is None.
    """
    text = value.strip()
    scheme = _SCHEME.match(text)
    if scheme is not None:
        return scheme.group() + _redacted_url(text[scheme.end():])
    if "@" in text:
        return f"{HIDDEN}@{text.rpartition('@')[2]}"
    pairs = _KEYWORD.findall(text)
    if pairs and text[0].isalpha():
        return " ".join(_redacted_pair(name, raw) for name, raw in pairs)
    return None


def _redacted_url(rest: str) -> str:
    """What follows ``scheme://``, redacted."""
    userinfo, at, rest = rest.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    shown_user = (f"{user}:{HIDDEN}@" if colon else f"{HIDDEN}@") if at else ""
    rest = rest.partition("#")[0]
    rest, question, query = rest.partition("?")
    hosts, slash, path = rest.partition("/")
    shown_query = ""
    if question:
        shown_query = "?" + "&".join(_redacted_pair(name, raw, in_query=True) if sep else HIDDEN
                                     for name, sep, raw in (part.partition("=") for part in query.split("&")))
    return f"{shown_user}{','.join(map(_host, hosts.split(',')))}{slash}{path}{shown_query}"


def _host(spec: str) -> str:
    """``host:port``, ``[::1]:port``; a port that is not a number is hidden (``postgresql://bot:hunter2/db`` lacks
    its ``@``)."""
    if spec.startswith("["):
        address, bracket, after = spec.partition("]")
        host = address + bracket
        colon, port = (":", after[1:]) if after.startswith(":") else ("", after)
    else:
        host, colon, port = spec.partition(":")
    return f"{host}{colon}{port if port.isdigit() else HIDDEN if port else ''}"


def _redacted_pair(name: str, raw: str, *, in_query: bool = False) -> str:
    """``name=raw`` with the value hidden unless it is a plain one; outside a URL's query, a name libpq does not
    know is hidden too (it may be a token ending in ``=`` padding)."""
    lowered = name.lower()
    if lowered in _PLAIN_NAMES:
        return f"{name}={raw}"
    return f"{name}={HIDDEN}" if in_query or lowered in _SECRET_NAMES else f"{HIDDEN}={HIDDEN}"


def redacted_text(text: str) -> str:
    """``text`` (an exception's words, a line about to be printed) with every URL in it redacted (a ``user:password@``
    that lost its URL's ``//`` too) and the value of every ``password=``, ``token=``, ``api_key=``... hidden."""
    text = _URL_IN_TEXT.sub(lambda url: redacted(url.group()) or HIDDEN, text)
    text = _USERINFO_IN_TEXT.sub(lambda userinfo: f"{userinfo.group(1)}:{HIDDEN}@", text)
    return _SECRET_PAIR.sub(lambda pair: f"{pair.group(1)}{pair.group(2)}{HIDDEN}", text)


def shown_value(value: str, *, credentials: bool) -> str:
    """A setting's value as its error names it, quoted: redacted when it is a URL or a DSN; any other value of a
    setting that takes credentials (a URL, a DSN, a token, a key) is not shown at all, as it may be a key."""
    shown = redacted(value)
    if shown is not None:
        return repr(shown)
    return "a value without scheme:// (not shown: it may be a key)" if credentials else repr(value)


def terminal_text(text: str) -> str:
    """``text`` with its control characters as visible escapes (``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``): a name is
    what a member typed, and a terminal must show it, not obey it (retitle itself, clear, begin a forged line)."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED_ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
