"""Upload when missing, and salvage: a cleanup flavor's upload job submitted (once per attempt) when
the hub lacks a completed job's artifact, or for the last healthy step of a collapse-cancelled run;
tracked with ONE ``sacct -j`` per cluster, retried at most ``cleanup.upload_retries`` times."""
