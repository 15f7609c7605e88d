"""Golden playthroughs: readable transcripts of whole games, replayed by tests.

Regenerate (after a deliberate rules change) with ``python -m tests.golden``.
"""
