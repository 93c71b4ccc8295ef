"""What memory knows of human text: how a message becomes keyword-index terms and embedder input, and an FTS5-safe
query (keywords), whether a chat line asks something and who may answer it (questions), which scripts an
embedding model reads (coverage), over one table of the scripts they treat apart (scripts); and the times a question
names, as windows of days (dates).

May import: nothing of the core (the standard library only); everything else may import it.
"""
