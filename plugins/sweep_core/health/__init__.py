"""What a gather measures of a cluster besides its jobs: inode and disk quota headroom (df -i and
the site quota commands) and the git status of the cluster's clone (tree hygiene).
"""
