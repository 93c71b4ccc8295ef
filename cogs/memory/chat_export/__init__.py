"""DiscordChatExporter archives: reading an export's JSON into message records (reader) and importing them into
memory file by file (importer).

May import: ``records``, ``ingest`` and the ``Memory`` facade; it sits beside the cog, above the core.
"""
