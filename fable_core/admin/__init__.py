"""Running the instance: its settings and registration, outgoing mail, the audit trail and the
logs (what admins do to accounts is identity's: :mod:`fable_core.identity.users`)."""
