#!/usr/bin/env python3
"""Write a page of a paper as PNG with a quote or passage highlighted (= ``episteme show``)."""

import sys

import _bootstrap

_bootstrap.require("pypdfium2", "numpy")

from episteme.commands.show import main  # noqa: E402

sys.exit(main())
