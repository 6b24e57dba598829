"""Helpers every test directory shares, imported by name (``from support.servers import serve``).

- :mod:`support.servers`: the one uvicorn runner (in the test's loop or in a thread), ``free_port``
- :mod:`support.users`: ``make_user`` and the one test ``PASSWORD``
- :mod:`support.snapshots`: compare with a snapshot file, or rewrite it when asked
- :mod:`support.fake_llm`: the scripted fake Ollama / OpenAI servers and ``FakeLLM.reset``
- :mod:`support.mcp_clients`: API keys and SDK clients for the MCP tests
- :mod:`support.smtp`: a real SMTP server (aiosmtpd) that keeps what it receives
- :mod:`support.sse`: server-sent events read off a real HTTP response
- :mod:`support.cli`: the ``fable`` command line run in-process (``fable_cli``)

The benchmarks use the same fakes (web site, SearXNG, model, Radicale, servers) without editing
``sys.path``: from the repository root ``tests`` is a namespace package (it has no
``__init__.py``, so pytest keeps importing ``support`` by name), and ``bench`` imports
``tests.support.web_site``. For that, the modules here import each other relatively
(``from .servers import free_port``), which works under either name.

``tests/test_support_rules.py`` keeps them the only copies.
"""
