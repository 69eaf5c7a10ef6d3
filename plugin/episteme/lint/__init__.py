"""wiki-lint: the run and ``--fix`` (:mod:`.core`), the rule registry and per-page checks
(:mod:`.rules`), and the ``--stores`` checks (:mod:`.stores`, imported only with ``--stores``).
Standard library plus PyYAML, except :mod:`.stores`."""

from .core import LintReport, enabled_rules, lint_wiki, parse_rule_args
from .fix import apply_fixes
from .indexes import check_indexes

__all__ = ["LintReport", "apply_fixes", "check_indexes", "enabled_rules", "lint_wiki", "parse_rule_args"]
