"""The RL deep-dive probe (issue 15 §3): one read-only session per cluster gathers a new RL run's
metric history, newest rollouts and log signatures; a pure verdict says KILL or NO-KILL."""
