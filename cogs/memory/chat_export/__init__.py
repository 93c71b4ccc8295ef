"""DiscordChatExporter archives: reading an export's JSON into message records a batch at a time (reader), on a
thread of its own that hands the batches to the event loop (feed), and importing them into memory file by file
(importer).

May import: ``records``, ``ingest`` and the ``Memory`` facade; it sits beside the cog, above the core.
"""
