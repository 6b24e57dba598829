"""What the assistant capability installs on the runtime when Fable opens
(:func:`fable_core.assistant.service.install_assistant`), under these keys: other domains ask
``fable.part(LLM)`` and get None while no model provider is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fable_core.tools.runtime import Part

if TYPE_CHECKING:
    from fable_core.assistant.gate import ModelGate
    from fable_core.assistant.providers.base import Provider
    from fable_core.assistant.service import Assistant

__all__ = ["ASSISTANT", "LLM", "MODEL_GATE"]

LLM: Part[Provider] = Part("llm")
"""The model provider (Ollama, an OpenAI-compatible server)."""
MODEL_GATE: Part[ModelGate] = Part("model_gate")
"""Each user's share of the model server."""
ASSISTANT: Part[Assistant] = Part("assistant")
"""Chat, its background workers and their sweeps."""
