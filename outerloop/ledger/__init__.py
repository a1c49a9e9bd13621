"""The ledger: append-only JSONL event files in the home's git repository."""
