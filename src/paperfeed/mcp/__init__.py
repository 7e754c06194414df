"""The MCP surface (docs/mcp.md): one ``MCPServer`` of tools and ``paper://`` resources over the App's
services, served over stdio by ``paperfeed mcp`` and over streamable HTTP at ``/mcp`` (the web app mounts
:class:`~paperfeed.mcp.server.HttpEndpoint` through :mod:`paperfeed.mcp.endpoint`, which loads it on the
first request). A third surface beside ``cli/`` and ``web/``: it imports
neither, and what it renders for agents (a paper as Markdown) the web's ``/papers/{id}.md`` reuses."""
