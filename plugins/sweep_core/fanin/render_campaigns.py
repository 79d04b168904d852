"""The Campaign sections: per configured campaign, its docs as read this sweep (POLICY.md's title,
STATE.md's own summary lines) above a box table of its jobs (every job whose name matches, RUNNING,
PENDING or ended in the window) with the STATE.md line that names each and its flags."""

from __future__ import annotations

from collections.abc import Sequence

from sweep_core.campaigns.docs import CampaignDocs
from sweep_core.fanin.render import NOTE_WIDTH, box_table, job_sort_key
from sweep_core.records.models import ClusterSnapshot


def render_campaign(docs: CampaignDocs, snaps: Sequence[ClusterSnapshot]) -> str:
    """``POLICY.md: <title>`` / ``STATE.md: <summary lines>`` then the jobs table (or why the docs were not read)."""
    if docs.error:
        return f"docs not read: {docs.error}"
    head = [f"POLICY.md ({docs.policy_path}): {docs.policy_title}", f"STATE.md ({docs.state_path}):"]
    head += [f"  {ln}" for ln in docs.summary] or ["  (no summary lines)"]
    jobs = [j for s in snaps for j in [*(s.running or []), *(s.pending or []), *(s.finished or [])]]
    rows = []
    for job in sorted((j for j in jobs if docs.pattern.search(j.name)), key=job_sort_key):
        note = "; ".join(f"[{f['rule']}] {f['message']}" for f in job.flags if f["rule"] == "campaign_drift")
        said = docs.mentions(job.job_id) or "not mentioned"
        rows.append([job.cluster, job.job_id, job.name, job.state, said, note or "—"])
    if not rows:
        rows.append(["—", "—", "(no jobs)", "—", "—", "—"])
    table = box_table(
        ["Cluster", "Job ID", "Name", "State", "STATE.md says", "Note"], rows, [None, None, 40, None, 50, NOTE_WIDTH]
    )
    return "\n".join(head) + "\n" + table
