"""``python launcher.py``: what a newcomer sees without a token, the admin list it reads, and the
shards it runs."""

import contextlib
import errno
import logging
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import aiohttp
import discord
import pytest
from aiohttp.client_reqrep import ConnectionKey
from discord.ext import commands

import bot
import launcher
from cogs.memory.runtime.config import Settings, load_settings
from tests.fixtures.credentials import FORMS, SECRET, environ_with, refused_lines


def test_without_a_token_it_explains_how_to_get_one_and_exits_non_zero(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")  # a developer's real .env must not be read
    assert launcher.main([]) == 2
    assert capsys.readouterr().err == launcher.NO_TOKEN_HELP + "\n"


def test_the_help_names_both_privileged_intents():
    assert "MESSAGE CONTENT INTENT" in launcher.NO_TOKEN_HELP and "SERVER MEMBERS INTENT" in launcher.NO_TOKEN_HELP


def test_the_bot_gets_the_admins_the_settings_name():
    made = launcher.create_bot(launcher.parse_args([]), load_settings({"BOT_ADMIN_IDS": "1, 2 3"}, None))
    assert made.bot_admin_ids == frozenset({1, 2, 3})


def test_bad_settings_stop_the_bot_with_one_line_each_and_exit_1(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DISCORD_TOKEN", "token")
    monkeypatch.setenv("DEV_GUILD_ID", "myserver")
    monkeypatch.setenv("BOT_ADMIN_IDS", "alice")
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    assert launcher.main([]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: DEV_GUILD_ID must be a Discord server id (a number), not 'myserver'",
        "error: BOT_ADMIN_IDS must be Discord user ids separated by commas, not 'alice'"]


def test_the_token_may_come_from_the_env_file(monkeypatch, tmp_path):
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    (tmp_path / ".env").write_text("DISCORD_TOKEN=from-the-file\nMEMORY_STORE_DMS=yes\n")
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    started = fake_start(monkeypatch)
    assert launcher.main([]) == 0
    assert started == [("from-the-file", True)]


def fake_start(monkeypatch) -> list:
    monkeypatch.setattr(launcher, "tune_interpreter", lambda: None)
    monkeypatch.setattr(discord.utils, "setup_logging", lambda **_: None)
    monkeypatch.setattr(launcher, "route_library_logs", lambda: None)
    started = []

    async def fake_run_bot(token, made):
        started.append((token, made.store_dms))

    monkeypatch.setattr(launcher, "run_bot", fake_run_bot)
    return started


# -- sharding: --shards N --shard-ids a,b ------------------------------------------------------------------------


def test_without_shard_flags_the_bot_is_one_unsharded_connection():
    made = launcher.create_bot(launcher.parse_args([]), load_settings({}, None))
    assert (type(made), made.shard_count) == (bot.MemoryBot, None)


def test_shard_flags_build_an_auto_sharded_bot_running_those_shards():
    made = launcher.create_bot(launcher.parse_args(["--shards", "4", "--shard-ids", "1,3"]), load_settings({}, None))
    assert isinstance(made, commands.AutoShardedBot)
    assert (made.shard_count, made.shard_ids) == (4, [1, 3])


def test_shards_without_ids_run_every_shard_in_this_process():
    made = launcher.create_bot(launcher.parse_args(["--shards", "2"]), load_settings({}, None))
    assert (made.shard_count, made.shard_ids) == (2, None)


def test_main_starts_the_bot_with_the_shards_it_was_given(monkeypatch, tmp_path):
    monkeypatch.setenv("DISCORD_TOKEN", "token")
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    monkeypatch.setattr(launcher, "tune_interpreter", lambda: None)
    monkeypatch.setattr(discord.utils, "setup_logging", lambda **_: None)
    monkeypatch.setattr(launcher, "route_library_logs", lambda: None)
    started = []

    async def fake_run_bot(token, made):
        started.append((token, made.shard_count, made.shard_ids))

    monkeypatch.setattr(launcher, "run_bot", fake_run_bot)
    assert launcher.main(["--shards", "3", "--shard-ids", "2"]) == 0
    assert started == [("token", 3, [2])]


@pytest.mark.parametrize(("argv", "message"), [
    (["--shard-ids", "0"], "--shard-ids needs --shards N (the total across all processes)"),
    (["--shards", "2", "--shard-ids", "1,2"], "--shard-ids must be between 0 and 1 for --shards 2; you gave 2"),
    (["--shards", "0"], "argument --shards: must be at least 1; you gave 0"),
    (["--shards", "2", "--shard-ids", "0,x"], "argument --shard-ids: must be shard numbers separated by commas; "
                                              "you gave '0,x'"),
    (["--shards", "2", "--shard-ids", "1,1"], "argument --shard-ids: names a shard twice: '1,1'"),
])
def test_bad_shard_flags_are_refused_with_a_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        launcher.parse_args(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: {message}\n")


@pytest.mark.skipif((Path(launcher.__file__).parent / ".env").exists(), reason="a real .env would start the bot")
def test_python_launcher_py_without_a_token_prints_the_setup_steps():
    env = {key: value for key, value in os.environ.items() if key != "DISCORD_TOKEN"}
    done = subprocess.run([sys.executable, "launcher.py"], cwd=Path(launcher.__file__).parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (2, launcher.NO_TOKEN_HELP + "\n")


# -- failures to reach Discord or be let in: one line saying what to do, exit 1, memory closed cleanly ------------


def refused_connection(host: str = "discord.com") -> aiohttp.ClientConnectorError:
    key = ConnectionKey(host, 443, True, True, None, None, None)
    return aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "Connect call failed ('1.2.3.4', 443)"))


def unresolved_name() -> aiohttp.ClientConnectorDNSError:
    key = ConnectionKey("discord.com", 443, True, True, None, None, None)
    return aiohttp.ClientConnectorDNSError(key, socket.gaierror(socket.EAI_NONAME, "Name or service not known"))


NETWORK_HELP = "check this machine's network, DNS and firewall (or set DISCORD_PROXY if it must use a proxy)"
TOKEN_LINE = ("error: Discord rejected DISCORD_TOKEN: reset the token in the Developer Portal "
              "(https://discord.com/developers/applications, your application, Bot) and put the new one in .env")


@pytest.fixture
def started_for_real(monkeypatch, tmp_path):
    """``launcher.main`` as ``python launcher.py`` runs it, up to the login (no logging set up, so stderr holds only
    what main prints); returns a function that makes the login fail with an error."""
    monkeypatch.setenv("DISCORD_TOKEN", "bogus")
    monkeypatch.delenv("DISCORD_PROXY", raising=False)
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    monkeypatch.setattr(launcher, "tune_interpreter", lambda: None)
    monkeypatch.setattr(discord.utils, "setup_logging", lambda **_: None)
    monkeypatch.setattr(launcher, "route_library_logs", lambda: None)

    def login_fails_with(error: BaseException) -> None:
        async def static_login(self, token):
            raise error

        monkeypatch.setattr(discord.http.HTTPClient, "static_login", static_login)

    return login_fails_with


@pytest.mark.parametrize(("error", "line"), [
    (discord.LoginFailure("Improper token has been passed."), TOKEN_LINE),
    (unresolved_name(), "error: cannot reach discord.com: its name does not resolve (Name or service not known): "
                        + NETWORK_HELP),
    (refused_connection(), f"error: cannot reach discord.com (Connection refused): {NETWORK_HELP}"),
    (aiohttp.ConnectionTimeoutError("Connection timeout to host https://discord.com/api/v10/users/@me"),
     f"error: cannot reach discord.com: it timed out: {NETWORK_HELP}"),
    (OSError(errno.ENETUNREACH, "Network is unreachable"),
     f"error: cannot reach discord.com (Network is unreachable): {NETWORK_HELP}"),
])
def test_a_failed_login_is_one_line_saying_what_to_do_and_exit_1(started_for_real, capsys, error, line):
    started_for_real(error)
    assert launcher.main([]) == 1
    assert capsys.readouterr().err == line + "\n"


def test_at_debug_level_the_failures_traceback_is_logged(started_for_real, caplog):
    started_for_real(refused_connection())
    with caplog.at_level(logging.DEBUG, logger="launcher"):
        assert launcher.main([]) == 1
    [record] = [record for record in caplog.records if record.name == "launcher"]
    assert isinstance(record.exc_info[1], aiohttp.ClientConnectorError)


def test_discord_down_is_one_line_without_its_error_page(started_for_real, capsys):
    response = SimpleNamespace(status=503, reason="Service Unavailable")
    started_for_real(discord.DiscordServerError(response, "<html>\n<body>upstream connect error</body>\n</html>"))
    assert launcher.main([]) == 1
    assert capsys.readouterr().err == ("error: Discord is not answering as it should (503 Service Unavailable (error "
                                       "code: 0): <html>): see https://discordstatus.com, and start the bot again "
                                       "later\n")


def test_a_bug_is_not_dressed_up_as_a_network_failure(started_for_real):
    started_for_real(KeyError("a bug"))
    with pytest.raises(KeyError):
        launcher.main([])


@pytest.mark.parametrize(("code", "line"), [
    (4004, TOKEN_LINE),
    (4011, "error: Discord asks this bot to shard (it is in too many servers for one connection): start it with "
           "--shards N"),
])
def test_discord_closing_the_gateway_for_good_is_one_line(started_for_real, monkeypatch, capsys, code, line):
    async def login(self, token):
        pass

    async def connect(self, *, reconnect=True):
        raise discord.ConnectionClosed(SimpleNamespace(close_code=code), shard_id=None, code=code)

    monkeypatch.setattr(bot.MemoryBot, "login", login)
    monkeypatch.setattr(bot.MemoryBot, "connect", connect)
    assert launcher.main([]) == 1
    assert capsys.readouterr().err == line + "\n"


def test_privileged_intents_refused_says_which_to_turn_on(started_for_real, monkeypatch, capsys):
    async def login(self, token):
        pass

    async def connect(self, *, reconnect=True):
        raise discord.PrivilegedIntentsRequired(None)

    monkeypatch.setattr(bot.MemoryBot, "login", login)
    monkeypatch.setattr(bot.MemoryBot, "connect", connect)
    assert launcher.main([]) == 1
    assert capsys.readouterr().err == (
        "error: Discord refused the privileged intents: turn on MESSAGE CONTENT INTENT and SERVER MEMBERS INTENT in "
        "the Developer Portal (https://discord.com/developers/applications, your application, Bot), then start the "
        "bot again\n")


def test_memory_open_when_discord_gives_up_is_flushed_and_closed(started_for_real, monkeypatch, tmp_path, capsys,
                                                                  make_record):
    """Discord closes the gateway for good (the token was reset while the bot ran) with messages still queued:
    the one line, exit 1, and every queued message stored."""
    from cogs.memory.memory import Memory
    from tests.fixtures.core import core_profile_for

    made = []
    real_create_bot = launcher.create_bot

    def create_bot(args, settings):
        made.append(real_create_bot(args, settings))
        made[0].db_path, made[0].index_dir = tmp_path / "memory.sqlite3", tmp_path / "indexes"
        made[0].open_memory = False
        return made[0]

    async def login(self, token):
        pass

    async def connect(self, *, reconnect=True):
        await self.attach_memory(await Memory.open(core_profile_for(), self.db_path, self.index_dir))
        for message_id in range(1, 201):
            await self.memory.add(make_record(message_id, f"queued message number {message_id}"))
        raise discord.ConnectionClosed(SimpleNamespace(close_code=4004), shard_id=None, code=4004)

    monkeypatch.setattr(launcher, "create_bot", create_bot)
    monkeypatch.setattr(bot.MemoryBot, "login", login)
    monkeypatch.setattr(bot.MemoryBot, "connect", connect)
    assert launcher.main([]) == 1
    err = capsys.readouterr().err  # after the embedding model's loading bar
    assert err.splitlines()[-1] == TOKEN_LINE and "Traceback" not in err
    assert made[0].memory is None  # closed by the bot
    with contextlib.closing(sqlite3.connect(tmp_path / "memory.sqlite3")) as database:
        assert database.execute("SELECT count(*) FROM messages").fetchone() == (200,)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.skipif((Path(launcher.__file__).parent / ".env").exists(), reason="a real .env would be read")
def test_python_launcher_py_through_an_unreachable_proxy_says_so_in_one_line():
    """The console entry point with a bogus token, its connection sent to a closed local port (no real network)."""
    port = closed_port()
    env = {**os.environ, "DISCORD_TOKEN": "bogus", "DISCORD_PROXY": f"http://user:secret@127.0.0.1:{port}"}
    done = subprocess.run([sys.executable, "launcher.py", "-q"], cwd=Path(launcher.__file__).parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"error: cannot reach the proxy in DISCORD_PROXY (127.0.0.1:{port}: Connection refused): check that it runs "
        "and that the address is right, or unset DISCORD_PROXY")
    assert "Traceback" not in done.stderr and "secret" not in done.stderr


@pytest.mark.skipif((Path(launcher.__file__).parent / ".env").exists(), reason="a real .env would be read")
@pytest.mark.parametrize("form", FORMS)
def test_python_launcher_py_names_each_bad_setting_in_one_line_without_its_credentials(form):
    environ = environ_with(form)
    clean = {key: value for key, value in os.environ.items() if key.lower() not in Settings.model_fields}
    done = subprocess.run([sys.executable, "launcher.py"], cwd=Path(launcher.__file__).parent, env=clean | environ,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert done.stderr.splitlines() == [f"error: {line}" for line in refused_lines(environ)]


class RefusingProxy:
    """An HTTP proxy on a local port that answers every request 407 (the password in DISCORD_PROXY is wrong)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        with contextlib.suppress(OSError):  # closed: the test is over
            while True:
                connection, _ = self.server.accept()
                with connection:
                    connection.recv(65536)
                    connection.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n"
                                       b"Proxy-Authenticate: Basic realm=\"proxy\"\r\n\r\n")

    def close(self) -> None:
        self.server.close()


@pytest.mark.skipif((Path(launcher.__file__).parent / ".env").exists(), reason="a real .env would be read")
def test_python_launcher_py_through_a_proxy_that_refuses_its_password_says_so_without_the_password():
    """aiohttp's own words for a 407 hold the proxy's whole URL, password and all."""
    proxy = RefusingProxy()
    try:
        env = {**os.environ, "DISCORD_TOKEN": "bogus", "DISCORD_PROXY": f"http://user:{SECRET}@127.0.0.1:{proxy.port}"}
        done = subprocess.run([sys.executable, "launcher.py", "-q"], cwd=Path(launcher.__file__).parent, env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        proxy.close()
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"error: the proxy in DISCORD_PROXY (127.0.0.1:{proxy.port}) refused the connection (HTTP 407): check the "
        "user and password in DISCORD_PROXY")
    assert "Traceback" not in done.stderr and SECRET not in done.stderr
