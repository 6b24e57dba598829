"""calculate: arithmetic, dates and durations, evaluated safely (no ``eval``)."""
