"""sweep_cancel: which jobs may be scancelled after a human approves, the approval prompt, and the
batched validate/cancel scripts.
"""
