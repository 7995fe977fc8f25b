"""``ragsift serve``: a compressor behind an HTTP API (FastAPI + uvicorn, the ``serve`` extra).

:mod:`~ragsift.service.schema` (the request and response JSON), :mod:`~ragsift.service.batching`
(requests that arrive together are compressed together), :mod:`~ragsift.service.app` (routes,
limits, the bearer token), :mod:`~ragsift.service.command` (the command line).
"""
