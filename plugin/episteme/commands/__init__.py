"""Command entry points.  Each module exposes ``main(argv: list[str] | None = None) -> int``;
``plugin/scripts/*.py`` and the ``episteme`` console command both call these, so there is one
implementation behind every way of running a command."""
