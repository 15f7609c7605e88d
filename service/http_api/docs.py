"""The ``/docs`` page's assets, served by the app itself: ReDoc is vendored in
``docs-assets`` (see its README), so the page renders without internet access, and the
page's Content-Security-Policy lets the browser load nothing from any other origin."""

from __future__ import annotations

from pathlib import Path

from flask import Flask, Response, abort, request, send_file

ASSETS = Path(__file__).resolve().parent / "docs-assets"  # not a name Python could import
ASSET_PREFIX = "/docs/assets/"
REDOC_URL = ASSET_PREFIX + "redoc.standalone.js"

# Every file the page may load, with its content type (not guessed from the machine's mime.types).
CONTENT_TYPES = {
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "redoc.standalone.js.LICENSE.txt": "text/plain; charset=utf-8",
    "LICENSE": "text/plain; charset=utf-8",
}

# ReDoc injects its styles (styled-components), runs its search index in a blob: worker and
# fetches the OpenAPI document; everything else of another origin is refused, such as the
# logo its sidebar would load from Redocly's CDN.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
    "font-src 'self' data:", "connect-src 'self'", "worker-src 'self' blob:", "base-uri 'none'",
    "form-action 'none'", "frame-ancestors 'none'",
])


def register(app: Flask) -> None:
    """Serve the assets under ``/docs/assets/`` and give the docs page its policy."""

    @app.get(ASSET_PREFIX + "<name>")
    def docs_asset(name: str) -> Response:
        """A file of the /docs page (ReDoc)."""
        if name not in CONTENT_TYPES:
            abort(404)
        response = send_file(ASSETS / name, mimetype=CONTENT_TYPES[name], max_age=3600)
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @app.after_request
    def _docs_policy(response: Response) -> Response:
        rule = request.url_rule
        if rule is not None and rule.endpoint.endswith(".openapi_redoc"):
            response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        return response
