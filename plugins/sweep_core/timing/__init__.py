"""Time the sweep keeps: the sacct window, the two cadences, how long an act may run on a login
node, and which failures are worth another try."""
