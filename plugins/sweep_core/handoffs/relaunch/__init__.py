"""sweep_cancel's relaunch, a hand-off beside cancel: the evidence of a RUNNING job, the policy judged
on its folded ledger history (``plan``), the brakes on standing permissions, and the acts
(``usecase``: requeue, or an ops.md relaunch command; iris: stop + command; the rest cancelled
through handoffs.cancel) with their scripts (``remote``).
"""
