"""Storage: the models, the database (embedded or not), its errors and its migrations."""
