"""``ragsift serve``'s OpenAPI schema says what the server does: plain-string documents, described
request fields, error bodies, the bearer scheme (the Authorize button of /docs), typed /health and
/plugins, document ids echoed; /docs works offline when Swagger UI's assets are installed, and
says where they come from when not. In-process (FastAPI's TestClient), no port."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

import ragsift  # noqa: E402
from ragsift.service import docs as service_docs  # noqa: E402
from ragsift.service.app import create_app  # noqa: E402
from ragsift.service.schema import HealthOut, PluginOut  # noqa: E402

TOKEN = "test-token-openapi"  # a test value, not a secret


def _client(token: str | None = None) -> TestClient:
    return TestClient(create_app(ragsift.load_compressor("bm25", selector={"k": 1}), "bm25", token=token,
                                 source="configs/bm25.toml"))


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_the_schema_takes_plain_string_documents_and_describes_every_request_field() -> None:
    with _client() as client:
        schema = client.get("/openapi.json").json()
    request = _resolve(schema, schema["paths"]["/compress"]["post"]["requestBody"]["content"]["application/json"]["schema"])
    documents = request["properties"]["documents"]["anyOf"][0]["items"]
    kinds = [_resolve(schema, option) for option in documents["anyOf"]]
    assert {"type": "string"} in kinds and any("text" in k.get("properties", {}) for k in kinds)
    example = _resolve(schema, request["properties"]["examples"]["anyOf"][0]["items"])
    document = _resolve(schema, schema["components"]["schemas"]["DocumentIn"])
    for model in (request, example, document):
        missing = [name for name, field in model["properties"].items() if not field.get("description")]
        assert missing == [], missing
    with _client() as client:  # and the server takes what the schema says
        body = client.post("/compress", json={"question": "Who wrote Hamlet?", "documents": [
            "Shakespeare wrote Hamlet.", {"text": "Paris is in France.", "id": "paris"}]}).json()
    assert body["results"][0]["document_ids"] == ["0", "paris"]


def test_error_bodies_are_declared_and_are_what_the_server_sends() -> None:
    with _client() as client:
        schema = client.get("/openapi.json").json()
        refused = client.post("/compress", json={"question": "q"})
    responses = schema["paths"]["/compress"]["post"]["responses"]
    for status in ("408", "413", "422", "500"):
        assert responses[status]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}
    assert "401" not in responses and "security" not in schema["paths"]["/compress"]["post"]  # no token: no scheme
    error = schema["components"]["schemas"]["ErrorOut"]
    assert refused.status_code == 422 and set(refused.json()) <= set(error["properties"]) and "error" in refused.json()


def test_the_bearer_scheme_is_declared_when_a_token_is_required() -> None:
    with _client(TOKEN) as client:
        schema = client.get("/openapi.json").json()
        assert client.get("/plugins").status_code == 401
        assert client.get("/plugins", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    (scheme,) = schema["components"]["securitySchemes"].values()
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    for path, method in (("/compress", "post"), ("/plugins", "get")):
        operation = schema["paths"][path][method]
        assert operation["security"] == [{next(iter(schema["components"]["securitySchemes"])): []}]
        assert operation["responses"]["401"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
    assert "security" not in schema["paths"]["/health"]["get"]


def test_health_and_plugins_are_typed_and_answer_their_types() -> None:
    with _client() as client:
        schema = client.get("/openapi.json").json()
        health, plugins = client.get("/health").json(), client.get("/plugins").json()
    health_schema = schema["paths"]["/health"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert health_schema == {"$ref": "#/components/schemas/HealthOut"}
    plugins_schema = schema["paths"]["/plugins"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert plugins_schema["additionalProperties"]["items"] == {"$ref": "#/components/schemas/PluginOut"}
    assert HealthOut.model_validate(health).compressor == "bm25"
    bm25 = next(PluginOut.model_validate(p) for p in plugins["scorer"] if p["name"] == "bm25")
    assert bm25.class_ == "BM25Scorer" and "class" in plugins["scorer"][0] and bm25.fields["k1"].default == 1.5
    assert bm25.extras == [] and next(p for p in plugins["scorer"] if p["name"] == "dual-encoder")["extras"] == ["models"]


def test_docs_without_local_assets_says_where_they_come_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "swagger_ui_bundle", None)  # as if not installed
    with _client() as client:
        page = client.get("/docs").text
        assert client.get("/redoc").status_code == 404  # no second CDN page
    assert f"{service_docs.CDN}/swagger-ui-bundle.js" in page and "/openapi.json" in page
    assert "without network" in page and "swagger-ui-bundle" in page


def test_docs_with_local_assets_serves_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "swagger-ui-bundle.js").write_text("window.SwaggerUIBundle = function () {};")
    (tmp_path / "swagger-ui.css").write_text("body {}")
    monkeypatch.setitem(sys.modules, "swagger_ui_bundle", types.SimpleNamespace(swagger_ui_path=str(tmp_path)))
    with _client(TOKEN) as client:
        page = client.get("/docs").text
        script = client.get("/docs/assets/swagger-ui-bundle.js")  # no token needed for the page and its assets
    assert "/docs/assets/swagger-ui-bundle.js" in page and "cdn.jsdelivr" not in page and "without network" not in page
    assert script.status_code == 200 and "SwaggerUIBundle" in script.text
