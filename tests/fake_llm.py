"""Only for ``bench/assistant.py``, which puts tests/ on ``sys.path`` and imports ``fake_llm``.

The fake LLM lives in :mod:`support.fake_llm` and tests import it from there (a test in
``tests/test_support_rules.py`` refuses an import of this module); drop this file once the
benchmark imports ``support.fake_llm`` and ``support.servers.free_port`` itself.
"""

from support.fake_llm import FakeLLM, Reply, embed_text, ollama_app, openai_app
from support.servers import free_port

__all__ = ["FakeLLM", "Reply", "embed_text", "free_port", "ollama_app", "openai_app"]
