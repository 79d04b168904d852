"""DB registration after an SFT upload (the second half of sft-job-cleanup: upload + DB register):
plan (the story from the ledger's acts, HF-only never, the next move, the argv) -> usecase (ledger
claim, ONE session per cluster) -> remote (the act script of the claimed commands, each one's outcome)."""
