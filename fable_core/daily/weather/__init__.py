"""Weather: forecasts from Open-Meteo for the user's journal locations (or any coordinates),
places found by name through Nominatim, each user's forecasts cached with the one of the day
before, so that what changed (warmer, colder, rain now expected) can be told."""
