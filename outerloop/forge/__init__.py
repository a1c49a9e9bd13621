"""Forges: the code host (GitHub, or the local forge of bare repos + SQLite)."""
