"""Every change to memory, in order: the queue (queue), the writer that stores each message at once (writer), the
background vector filler (filler), deletes and edits that race ahead of their add (tombstones), what a flush reports
(report), what is kept of a message's text (content), re-embedding after a model switch (reembed), and guilds' and
channels' names as last seen (names).

May import: ``records``, ``language``, ``vectors``, ``runtime.private_files`` (files made 0600) and the store protocol and rows (``store.protocol``,
``store.rows``); never a concrete store. Each part is typed against the store role it uses (the writer
``MessageWrites``, the filler ``PendingVectors``, the queue ``IngestStore``, names ``PlaceNameStore``).
"""
