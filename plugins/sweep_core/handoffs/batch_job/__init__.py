"""One batch-job machine for every hand-off that submits sbatch jobs (upload, consolidate, the HF
chain, ops.md relaunch commands): plan (states, ids, argv, retry, typed outcomes) -> use-case
(ledger claim / fill / release, one submit session) -> remote (submit, track, find scripts)."""
