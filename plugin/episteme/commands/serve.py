"""``episteme serve``: run the HTTP API and the web UI over one wiki.

The API (``POST /ingest``, ``POST /chat``, ``/wiki``, ``/graph``, ``/jobs``, ``/health``; reference
at ``/docs``) and the UI at ``/`` call the same functions as the commands.  Binds 127.0.0.1 by
default; any other address needs a bearer token (``--token`` or ``$EPISTEME_TOKEN``).
"""

from __future__ import annotations

import os

from ..cliutil import ArgumentParser, run_main
from ._stores import add_model_options, add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme serve", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--token", default=None,
                   help="require 'Authorization: Bearer TOKEN' (default: $EPISTEME_TOKEN); "
                   "mandatory when --host is not a loopback address")
    p.add_argument("--max-pdf-bytes", type=int, default=None,
                   help="upload size limit (default: $EPISTEME_MAX_PDF_BYTES or 50 MiB)")
    p.add_argument("--max-pages", type=int, default=None,
                   help="page limit per PDF (default: $EPISTEME_MAX_PAGES or 200)")
    p.add_argument("--write-mode", default=None, choices=("auto", "claude", "extractive"),
                   help="wiki writer mode for uploads (default: the writer's own default)")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    add_store_options(p)
    add_model_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError
        from ..server.app import check_bind, serve

        if not 0 < args.port < 65536:
            raise UsageError(f"--port must be 1-65535, got {args.port}")
        token = args.token or os.environ.get("EPISTEME_TOKEN") or None
        check_bind(args.host, token)  # before loading anything
        settings = settings_from_args(args)
        changes = {}
        if args.max_pdf_bytes is not None:
            changes["max_pdf_bytes"] = args.max_pdf_bytes
        if args.max_pages is not None:
            changes["max_pages"] = args.max_pages
        if changes:
            settings = settings.with_(**changes)
        serve(settings, host=args.host, port=args.port, token=token, write_mode=args.write_mode,
              log_level=args.log_level)
        return 0

    return run_main(body, json_errors=lambda: False)
