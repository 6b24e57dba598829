"""Running the instance: its settings and registration, outgoing mail, users, the audit trail and
the logs."""
