#!/usr/bin/env python3
"""Create or update one wiki section; body on stdin (= ``episteme write-section``).

Light on purpose: standard library + PyYAML, so the agent can call it many times per paper.
"""

import sys

import _bootstrap

_bootstrap.require("yaml")

from episteme.commands.write_section import main  # noqa: E402

sys.exit(main())
