"""The SQL both stores read a message's channel neighbours with: one statement, written once for both dialects.

Row-value comparisons and correlated subqueries mean the same on SQLite and PostgreSQL; each store adds the FROM
that names the source rows (store/sqlite/search.py, store/postgres/search.py). ``search.context.window_of``
reads the rows.
"""

from __future__ import annotations

from functools import cache

__all__ = ("CREATE_REPLY_INDEX", "select_neighbour_ids")

# Each row ``c``'s previous row id in its channel, then the reply_window + 1 after it, nearest first.
_NEXT_ID = """
  (SELECT n.id FROM messages AS n
   WHERE n.guild_id = c.guild_id AND n.channel_id = c.channel_id
     AND (n.created_at, n.message_id) > (c.created_at, c.message_id)
   ORDER BY n.created_at, n.message_id LIMIT 1 OFFSET {offset})"""
# The index that finds a message's replies (Discord's reply), however far below it they come: both stores' migrations
# create it (SQLite's 0009_replies, PostgreSQL's 0005_replies).
CREATE_REPLY_INDEX = """
CREATE INDEX messages_reply_to ON messages (reply_to_id, guild_id, channel_id, created_at, message_id)
WHERE reply_to_id IS NOT NULL
"""
# Each row ``c``'s replies (Discord's reply), earliest first; the messages_reply_to index finds them.
_REPLY_ID = """
  (SELECT r.id FROM messages AS r
   WHERE r.reply_to_id = c.message_id AND r.guild_id = c.guild_id AND r.channel_id = c.channel_id
   ORDER BY r.created_at, r.message_id LIMIT 1 OFFSET {offset})"""
_PREVIOUS_ID = """
SELECT c.id,
  (SELECT p.id FROM messages AS p
   WHERE p.guild_id = c.guild_id AND p.channel_id = c.channel_id
     AND (p.created_at, p.message_id) < (c.created_at, c.message_id)
   ORDER BY p.created_at DESC, p.message_id DESC LIMIT 1),"""


@cache
def select_neighbour_ids(reply_window: int) -> str:
    """Each source row's id, its previous row id, the ``reply_window + 1`` after it and its first ``reply_window``
    replies; the caller appends the FROM that names ``c``."""
    return _PREVIOUS_ID + ",".join(
        [*(_NEXT_ID.format(offset=offset) for offset in range(reply_window + 1)),
         *(_REPLY_ID.format(offset=offset) for offset in range(reply_window))]) + "\n"
