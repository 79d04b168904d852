"""Untrusted cluster text made safe: which names may reach an argv or a path (names), and what
cluster text may look like once it leaves a code fence (text)."""
