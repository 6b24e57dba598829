"""The assistant: LLM providers, semantic search, conversations, generation and the tool loop.

The assistant is the registry's third surface: the model sees the caller's tools as LLM tool
schema and every call it makes runs through the dispatcher as the user
(``Caller(surface="assistant", conversation_id=...)``).
"""
