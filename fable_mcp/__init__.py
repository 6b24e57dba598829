"""Fable's MCP surface: the registry served over stdio, streamable HTTP and a remote bridge.

Entry points: :func:`fable_mcp.stdio.run_stdio` (``fable mcp``), :class:`fable_mcp.http.McpHttp`
and :func:`fable_mcp.http.create_app` (``/mcp`` in ``fable serve``), and
:func:`fable_mcp.bridge.run_bridge` (``fable mcp --remote``); all of them serve
:class:`fable_mcp.server.FableMcp`. Nothing is imported here, so ``fable mcp`` loads only what
it needs, as late as it can (see :mod:`fable_mcp.stdio`).
"""
