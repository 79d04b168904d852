"""Hygiene triage of a cluster clone: the local-clone commit and the fast-forward pull offer."""
