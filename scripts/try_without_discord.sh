#!/usr/bin/env bash
# The README's "Try it without Discord", run as written: import a DiscordChatExporter export, look at it, search it,
# find a member's id by name, forget them, and check nothing of them is left. CI runs it on a fresh clone
# (.ci/run). Usage: scripts/try_without_discord.sh [EXPORT_DIR]; without EXPORT_DIR it writes a small sample export
# (one server: #general, #help and a thread) where DiscordChatExporter would have. Works in a scratch folder: the
# bot's data/ is never touched. Needs no token and no network.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TOKENIZERS_PARALLELISM=false
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
exports=${1:-$scratch/exports}
memory() { "$PYTHON" -m cogs.memory --db "$scratch/data/memory.sqlite3" --index-dir "$scratch/data/indexes" "$@"; }

if [ $# -eq 0 ]; then
    mkdir -p "$exports"
    "$PYTHON" - "$exports" <<'PY'
import json, sys
from pathlib import Path

def channel(name, channel_id, lines, kind="GuildTextChat", parent=None):
    messages = [{"id": str(channel_id * 1000 + n), "type": "Default",
                 "timestamp": f"2024-05-01T12:{n:02d}:00+00:00", "timestampEdited": None, "content": text,
                 "author": {"id": str(author_id), "name": author, "discriminator": "0", "nickname": None,
                            "isBot": False}, "attachments": [], "embeds": []}
                for n, (author, author_id, text) in enumerate(lines)]
    return {"guild": {"id": "4242", "name": "Picnic Club"},
            "channel": {"id": str(channel_id), "type": kind, "categoryId": parent and str(parent[0]),
                        "category": parent and parent[1], "name": name}, "messages": messages}

exports = Path(sys.argv[1])
files = {
    "general.json": channel("general", 101, [("alice", 11, "the picnic moved to Saturday at the lake"),
                                             ("bob", 12, "I will bake a cake for the picnic"),
                                             ("carol", 13, "who is bringing blankets?")]),
    "help.json": channel("help", 102, [("bob", 12, "the deploy password rotates on Monday"),
                                       ("alice", 11, "thanks, noted")]),
    "raffle.json": channel("raffle", 103, [("carol", 13, "raffle tickets are five each")],
                           kind="GuildPublicThread", parent=(101, "general")),
}
for name, export in files.items():
    (exports / name).write_text(json.dumps(export), encoding="utf-8")
PY
fi

# --- The README's commands, in its order ------------------------------------------------------------------------
memory import "$exports"/*.json
memory guilds
memory channels --guild 4242
memory members --guild 4242
memory search "when is the picnic" --guild 4242 --no-rerank
memory forget --guild 4242 --member @bob --yes
memory stats
# The dashboard over these files (README: `dashboard`): served without a bot, a sign-in link from dashboard-link,
# the link signs in; then stopped as an admin would (Ctrl-C, here SIGTERM).
port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PYTHON" -m cogs.memory dashboard --data "$scratch/data" --port "$port" >"$scratch/dashboard.log" 2>&1 &
dashboard=$!
link=""
for _ in $(seq 300); do  # up to ~5 minutes on a loaded box: it is ready when dashboard-link gets a link
    kill -0 "$dashboard" 2>/dev/null || { cat "$scratch/dashboard.log" >&2; echo "dashboard exited" >&2; exit 1; }
    if link=$("$PYTHON" -m cogs.memory dashboard-link --data "$scratch/data" --port "$port" 2>/dev/null); then break; fi
    sleep 1
done
signed_in=$("$PYTHON" - "$link" <<'PY' 2>&1 || true
import http.cookiejar, re, sys, urllib.request
link = re.search(r"http://\S+", sys.argv[1])  # the link sets the session's cookie, then sends the browser on
browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
print(browser.open(link.group(), timeout=30).status if link else "no link")
PY
)
kill "$dashboard"
wait "$dashboard" || true

# --- What they must have done -------------------------------------------------------------------------------------
fail() { echo "try_without_discord: $*" >&2; exit 1; }
if [ $# -eq 0 ]; then  # each output read whole first: grep -q stops reading at its match
    found=$(memory search "picnic" --guild 4242 --no-rerank)
    grep -q "https://discord.com/channels/4242/101/101000" <<<"$found" \
        || fail "search did not show alice's message with its jump link"
    members=$(memory members --guild 4242)
    ! grep -q "bob" <<<"$members" || fail "bob is still a member after forget"
    grep -q "^11  alice  2 messages" <<<"$members" || fail "members does not list alice by id"
    found=$(memory search "cake" --guild 4242 --no-rerank)
    ! grep -q "bake a cake" <<<"$found" || fail "bob's cake is still found"
fi
[ "$signed_in" = "200" ] || fail "the dashboard's sign-in link did not sign in ($signed_in)"
echo "try_without_discord: ok"
