"""``ragsift serve --config NAME``: load the config's compressor once, then serve it over HTTP."""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import Any

from ragsift.cli_types import add_set_option, positive
from ragsift.errors import ConfigError, MissingDependencyError, RagsiftError

__all__ = ["add_serve_command", "TOKEN_ENV"]

#: the environment variable the bearer token is read from (``--token-env`` names another)
TOKEN_ENV = "RAGSIFT_SERVE_TOKEN"


def add_serve_command(sub: Any) -> None:
    from ragsift.service.schema import ServiceLimits

    d = ServiceLimits()
    p = sub.add_parser(
        "serve", help="serve a compressor over HTTP (POST /compress)", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Load the config's compressor once and serve it over HTTP: POST /compress (one or many examples), "
        "POST /rerank (Cohere's, Jina's or TEI's rerank request: documents scored and pruned), GET /plugins, GET /health, "
        "GET /metrics (Prometheus), OpenAPI docs at /docs. Requests that arrive together are compressed in one batch. "
        f"With ${TOKEN_ENV} set, /compress, /rerank and /plugins need 'Authorization: Bearer TOKEN'. Needs the 'serve' extra "
        "(pip install 'ragsift[serve]').",
        epilog="examples:\n  ragsift serve --config bm25\n"
        "  RAGSIFT_SERVE_TOKEN=secret ragsift serve -c exit-offline --port 8080\n"
        "  ragsift serve -c cascades#bm25-docs3 --set compressors.bm25-docs3.selector.k=4\n"
        "  curl -s localhost:8000/compress -H 'Content-Type: application/json' \\\n"
        "       -d '{\"question\": \"Who wrote Hamlet?\", \"documents\": [\"Hamlet is a play. Shakespeare wrote it.\"]}'")
    p.add_argument("--config", "-c", required=True, help="config file or name in configs/ (one compressor; "
                   "CONFIG#LABEL picks one of a config with several)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0 = any free port, printed at start)")
    p.add_argument("--max-batch-examples", type=positive(int), default=d.max_batch_examples,
                   help=f"examples compressed together at most (default {d.max_batch_examples})")
    p.add_argument("--max-wait-ms", type=float, default=d.max_wait_ms,
                   help=f"how long the first waiting request waits for others to join its batch (default {d.max_wait_ms})")
    p.add_argument("--max-request-bytes", type=positive(int), default=d.max_request_bytes,
                   help=f"largest request body (default {d.max_request_bytes}); larger: 413")
    p.add_argument("--max-examples", type=positive(int), default=d.max_examples,
                   help=f"examples per request at most (default {d.max_examples}); more: 413")
    p.add_argument("--max-documents", type=positive(int), default=d.max_documents,
                   help=f"documents per example at most (default {d.max_documents}); more: 413")
    p.add_argument("--max-characters", type=positive(int), default=d.max_characters,
                   help=f"characters of text per request at most (questions, titles, documents; default "
                   f"{d.max_characters}); more: 413. One request is compressed in one batch and the requests "
                   "that arrive meanwhile wait behind it")
    p.add_argument("--max-response-bytes", type=positive(int), default=d.max_response_bytes,
                   help=f"largest answer (default {d.max_response_bytes}); larger: 413")
    p.add_argument("--header-timeout", type=positive(float), default=10.0,
                   help="seconds a request's headers may take to arrive (default 10); slower: 408 and the connection closed")
    p.add_argument("--body-timeout", type=positive(float), default=d.body_timeout_s,
                   help=f"seconds a request's body may take to arrive after its headers (default {d.body_timeout_s:g}); "
                   "slower: 408")
    p.add_argument("--token-env", default=TOKEN_ENV, help=f"NAME of the environment variable holding the bearer token "
                   f"(default {TOKEN_ENV}; unset or empty: no token needed)")
    p.add_argument("--keep-alive", type=positive(float), default=30.0,
                   help="seconds an idle keep-alive connection stays open (default 30; uvicorn's own default is 5: "
                   "a slow client reusing a connection as the server closes it sees a connection error)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    add_set_option(p)
    p.set_defaults(func=_cmd_serve)


def _port(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number; got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535 (0 = any free one); got {text}")
    return value


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a taken port is one clear error."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET  # a host name
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise RagsiftError(f"cannot listen on {host}:{port}: {exc.strerror or exc}. Choose another --port "
                           "(0 = any free one) or --host.") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _cmd_serve(args: argparse.Namespace) -> int:
    from ragsift.config import load_labelled_config
    from ragsift.service.schema import ServiceLimits

    if args.max_wait_ms < 0:
        raise ConfigError(f"--max-wait-ms must be >= 0; got {args.max_wait_ms}.")
    try:
        from ragsift.service.app import create_app
        from ragsift.service.server import make_server
    except ImportError as exc:
        raise MissingDependencyError(f"'ragsift serve' needs FastAPI and uvicorn ({exc}): pip install 'ragsift[serve]'.") from None
    config, chosen = load_labelled_config(args.config, args.overrides)
    label, compressor = config.only_compressor("serve", chosen)
    token = os.environ.get(args.token_env) or None
    if not _is_loopback(args.host) and token is None:
        print(f"ragsift serve: warning: listening on {args.host} without a token: anyone who can reach this port can "
              f"use the service (export {args.token_env} to require one).", file=sys.stderr)
    sock = _bind(args.host, args.port)
    print(f"ragsift serve: loading '{label}' from {config.source} ...", file=sys.stderr, flush=True)
    compressor.warm_up()  # every model loads now, once, before the first request
    limits = ServiceLimits(max_request_bytes=args.max_request_bytes, max_examples=args.max_examples,
                           max_documents=args.max_documents, max_characters=args.max_characters,
                           max_batch_examples=args.max_batch_examples,
                           max_wait_ms=args.max_wait_ms, max_response_bytes=args.max_response_bytes,
                           body_timeout_s=args.body_timeout)
    app = create_app(compressor, label, limits=limits, token=token, source=config.source)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"ragsift serve: '{label}' ready on http://{shown}:{port} (docs: /docs; token "
          f"{'required, from $' + args.token_env if token else 'not required'})", file=sys.stderr, flush=True)
    server = make_server(app, header_timeout=args.header_timeout, body_timeout=args.body_timeout, keep_alive=args.keep_alive,
                         log_level=args.log_level)
    server.run(sockets=[sock])
    return 0
