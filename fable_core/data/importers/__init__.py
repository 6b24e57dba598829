"""Importers: an Obsidian vault, a basic-memory project, ChatGPT and Claude exports."""
