"""sweep_tracker_harvest: pending tracker rows, eval results JSON, and the read-only harvest script."""
