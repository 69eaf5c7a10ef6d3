"""The HTTP API with its web UI (``static/``) and the MCP server: thin layers over query,
ingest, graph and lint."""
