"""LLM providers behind one small interface; :func:`make_provider` picks one from settings."""

from __future__ import annotations

from fable_core.assistant.providers.base import (
    ChatChunk,
    Health,
    NoProvider,
    Provider,
    StreamCut,
    ToolCall,
    unavailable,
)
from fable_core.config import Settings

__all__ = ["ChatChunk", "Health", "NoProvider", "Provider", "StreamCut", "ToolCall", "make_provider", "unavailable"]


def make_provider(settings: Settings) -> Provider:
    """The provider ``LLM_PROVIDER`` names (``none`` gives one that refuses every LLM call)."""
    if settings.llm_provider == "ollama":
        from fable_core.assistant.providers.ollama import OllamaProvider

        return OllamaProvider(settings.ollama_url, settings.ollama_model, settings.embed_model,
                              num_ctx=settings.ollama_num_ctx,
                              first_token_timeout=settings.llm_first_token_timeout)
    if settings.llm_provider == "openai":
        from fable_core.assistant.providers.openai import OpenAIProvider

        return OpenAIProvider(settings.openai_base_url, settings.openai_model, settings.embed_model,
                              api_key=settings.openai_api_key,
                              first_token_timeout=settings.llm_first_token_timeout)
    return NoProvider()
