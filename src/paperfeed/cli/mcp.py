"""``paperfeed mcp``: serve the MCP tools over stdio, for a desktop assistant that starts this process."""

from __future__ import annotations

from typing import Annotated

import typer

from .context import Context

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        ctx: typer.Context,
        token: Annotated[
            str | None,
            typer.Option(
                envvar="PAPERFEED_MCP_TOKEN",
                help="A personal API token (create one on /account): the reader whose library, 'For you' "
                "feed and alerts the tools use. Without it only the read-only tools answer.",
                show_envvar=True,
            ),
        ] = None,
    ) -> None:
        """Serve paperfeed's MCP tools (search, papers, feeds, library) over stdio (docs/mcp.md)."""
        # the MCP SDK, the store and the models are paid for by this command only
        import anyio

        from paperfeed.mcp.server import stdio_server

        c: Context = ctx.obj
        server = stdio_server(c.app, token)
        c.err.print(
            f"paperfeed MCP server on stdio ({'with' if token else 'without'} a reader token)",
            highlight=False,
        )
        anyio.run(server.run_stdio_async)
