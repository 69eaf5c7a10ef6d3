#!/usr/bin/env python3
"""Structural queries over the wiki's [[link]] graph: stats, neighbors, shortest-path, hubs,
orphans, cluster, query.  ``--help`` lists the options; the logic is in
``episteme.commands.graph`` (the same as ``episteme graph``)."""

import gc
import os
import sys

import _bootstrap

_bootstrap.require("yaml")

from episteme.commands.graph import main  # noqa: E402

if __name__ == "__main__":
    # A one-shot command that ends with os._exit: no cyclic garbage is worth collecting, and a
    # collection right after the scan walks every page object the graph holds (~9 ms at 10k
    # pages).  The graph is held until the exit so that it is never freed object by object.
    gc.disable()
    held: list = []
    rc = main(hold=held)
    sys.stdout.flush()
    sys.stderr.flush()
    # a one-shot command: skip freeing the graph's objects one by one at interpreter exit
    # (tens of milliseconds for a large wiki; the OS takes the memory back at once)
    os._exit(rc)
