"""One sweep's pipeline, above the rules it runs (steps)."""
