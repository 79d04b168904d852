"""CoreWeave (iris controller + Kubernetes pods), the pure part: iris job states mapped onto the
sweep's, the silent-wedge rule, pod counts. The poll itself runs in sweep_operators.
"""
