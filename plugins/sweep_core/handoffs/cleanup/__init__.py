"""sweep_cleanup: what may be deleted and why (flavors, every guard), the probe and rm scripts."""
