"""Backup and restore: a versioned archive of the instance or of one account."""
