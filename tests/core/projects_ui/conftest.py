"""The assistant's fixtures (a Fable talking to the fake Ollama), from tests/assistant, for the
chat's core tests here."""

from __future__ import annotations

from assistant.conftest import _settle, ai_fable, ai_settings, assistant, fake, fake_state, ollama_url

__all__ = ["_settle", "ai_fable", "ai_settings", "assistant", "fake", "fake_state", "ollama_url"]
