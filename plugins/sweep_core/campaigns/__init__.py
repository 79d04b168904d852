"""Named campaigns (issue 14, runbook §1): each sweep reads a campaign's own POLICY.md and STATE.md
from the local ground-truth clone (never edits them) and checks what STATE.md states against the
clusters."""
