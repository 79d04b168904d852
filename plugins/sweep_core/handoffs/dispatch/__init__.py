"""The sweep's side of the hand-offs, above every hand-off it hands work to: which hand-offs get
work this sweep and the ``conf`` each gets (``triggers``; ``keep_tracking`` keeps a consolidation in
flight moving), and what a hand-off's policy is handed, folded from the ledger once per run
(``views``), and the giving itself, once per job (``give``). Which hand-offs the config turns on at all is ``admin.switches`` (check-config)."""
