"""``GET /docs`` of ``ragsift serve``: FastAPI's Swagger UI page, its assets served by the service
itself when an installed package carries them, else loaded from a CDN, which the page says.

Swagger UI's script and stylesheet are not part of FastAPI; FastAPI's own page loads them from
cdn.jsdelivr.net, which a machine without network cannot reach. With the ``swagger-ui-bundle``
package installed (``pip install swagger-ui-bundle``, its folder ``swagger_ui_path``) they are
served from ``/docs/assets/`` and the page works offline; without it the page names the CDN it
loads them from and points to ``/openapi.json``, the schema itself, which is always served here.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

__all__ = ["add_docs", "local_assets", "CDN", "ASSETS_URL"]

#: where FastAPI's page loads Swagger UI from when no installed package carries it
CDN = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5"
#: where the service serves a local copy
ASSETS_URL = "/docs/assets"
_FILES = ("swagger-ui-bundle.js", "swagger-ui.css")


def local_assets() -> Path | None:
    """The folder of an installed Swagger UI (the ``swagger-ui-bundle`` package) that holds its
    script and stylesheet, else None."""
    try:
        module = importlib.import_module("swagger_ui_bundle")
    except ImportError:
        return None
    folder = getattr(module, "swagger_ui_path", None)
    if folder is None or not all((Path(folder) / name).is_file() for name in _FILES):
        return None
    return Path(folder)


def add_docs(app: Any, title: str = "ragsift") -> None:
    """``GET /docs`` on ``app`` (made with ``docs_url=None``), with local assets when installed."""
    folder = local_assets()
    if folder is not None:
        app.mount(ASSETS_URL, StaticFiles(directory=folder), name="swagger-ui-assets")
        base, note = ASSETS_URL, ""
    else:
        base = CDN
        note = (f'<p style="font-family: sans-serif; margin: 1em">This page\'s Swagger UI script and stylesheet load from '
                f'<a href="{CDN}/">{CDN}</a>; without network the page stays blank. The API\'s schema is served here, '
                'at <a href="/openapi.json">/openapi.json</a>. To serve the page from this service, install the '
                "<code>swagger-ui-bundle</code> package where ragsift serve runs.</p>")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        page = get_swagger_ui_html(openapi_url=app.openapi_url, title=f"{title} - Swagger UI",
                                   swagger_js_url=f"{base}/swagger-ui-bundle.js", swagger_css_url=f"{base}/swagger-ui.css",
                                   swagger_favicon_url="data:,")
        html = bytes(page.body).decode()
        if note:
            html = html.replace("<body>", f"<body>\n{note}", 1)
        return HTMLResponse(html)
