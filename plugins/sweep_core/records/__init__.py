"""The records every room shares: typed sweep records (models), named vocabularies (vocab),
what one remote command gave back (remote_result) and each bucket's progress counter."""
