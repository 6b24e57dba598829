"""Moving data in and out: exports, backups and restores, importers (vaults, chat histories)."""
