"""The toolsets room: the discovery tools an MCP client always has (list the toolsets, enable
one for its session, find a tool by words). What a toolset is and a client's choice of them are
the kernel's (:mod:`fable_core.tools.toolsets`); the word matching is shared with the
assistant's tool pick (:mod:`fable_core.tools.tool_search`)."""
