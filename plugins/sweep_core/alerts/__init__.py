"""What a sweep tells people: the digest of what is new or changed since the previous sweep (from
the Parquet history), routed per channel by severity, laid out for Slack and for e-mail."""
