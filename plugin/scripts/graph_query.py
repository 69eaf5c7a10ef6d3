#!/usr/bin/env python3
"""Structural queries over the wiki's [[link]] graph: stats, neighbors, shortest-path, hubs,
orphans, cluster, query.  ``--help`` lists the options; the logic is in
``episteme.commands.graph`` (the same as ``episteme graph``)."""

import _bootstrap

_bootstrap.require("yaml")

from episteme.commands.graph import main  # noqa: E402

if __name__ == "__main__":
    _bootstrap.run_once(main)
