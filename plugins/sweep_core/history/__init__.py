"""The Parquet history: one file per sweep (its jobs, clusters and flags as rows), kept at an
ObjectStoragePath-like location; written atomically, read back for the digest, the page, plots."""
