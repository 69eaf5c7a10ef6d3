#!/usr/bin/env python3
"""Print a PDF's logical sections as JSON without storing anything (= ``episteme split``)."""

import sys

import _bootstrap

_bootstrap.require("pypdf")

from episteme.commands.split import main  # noqa: E402

sys.exit(main())
