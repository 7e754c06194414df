"""``/docs``: Swagger UI for the OpenAPI document, served from this server, never from a CDN.

FastAPI's built-in page loads Swagger UI from jsDelivr without integrity hashes (a CDN compromise would
run script on this origin) and inline script (which the site's CSP forbids), and it fails offline. Here
the assets come from the ``swagger-ui-py`` package (Swagger UI 5: OpenAPI 3.1, which FastAPI emits),
mounted at ``/docs/assets``, and the page starts them with ``static/docs.js``, so the one site-wide CSP
holds. The package's folder is located without importing it (no import-time work of its own). Should it
be missing from an install, ``/docs`` says so with a 503 rather than reaching out to a CDN.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from markupsafe import escape

from .errors import error_response
from .headers import baseline_headers
from .rendering import StaticAssets

__all__ = ["install", "swagger_ui_assets"]

_ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png")


def swagger_ui_assets() -> Path | None:
    """The folder with Swagger UI's built files, if the ``swagger-ui-py`` package is installed."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "static"
        if all((folder / name).is_file() for name in _ASSETS):
            return folder
    return None


def _swagger_html(title: str, static_url: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · API docs</title>"
        '<link rel="stylesheet" href="/docs/assets/swagger-ui.css">'
        '<link rel="icon" href="/docs/assets/favicon-32x32.png">'
        '</head><body><div id="swagger-ui" data-openapi-url="/openapi.json"></div>'
        '<script src="/docs/assets/swagger-ui-bundle.js"></script>'
        f'<script src="{escape(static_url)}"></script>'
        "</body></html>"
    )


def install(app: FastAPI, assets: StaticAssets) -> None:
    """Serve ``/docs`` and its assets (create the app with ``docs_url=None``)."""
    folder = swagger_ui_assets()
    if folder is not None:
        app.mount("/docs/assets", StaticFiles(directory=folder), name="docs-assets")

    @app.get("/docs", include_in_schema=False, response_class=HTMLResponse, response_model=None)
    def docs(request: Request) -> Response:
        if folder is None:
            return error_response(
                request, 503, "the API docs need the swagger-ui-py package; /openapi.json has the API"
            )
        return HTMLResponse(
            _swagger_html(app.title, assets.url("docs.js")), headers=baseline_headers(html=True)
        )
