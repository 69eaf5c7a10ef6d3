#!/usr/bin/env python3
"""Structural queries over the wiki's [[link]] graph: stats, neighbors, shortest-path, hubs,
orphans, cluster, query.  ``--help`` lists the options; the logic is in
``episteme.commands.graph`` (the same as ``episteme graph``)."""

import os
import sys

import _bootstrap

_bootstrap.require("yaml")

from episteme.commands.graph import main  # noqa: E402

if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # a one-shot command: skip freeing the graph's objects one by one at interpreter exit
    # (tens of milliseconds for a large wiki; the OS takes the memory back at once)
    os._exit(rc)
