"""Memory across sweeps (issue 18): ONE per-job ledger every sweep folds what it KNEW into (an
UNKNOWN or UNREACHABLE cluster changes nothing), the changes that fold finds, the hand-offs each
job was given (acted on once), and each RL series' max steps — stored beside the sweep history.
"""
