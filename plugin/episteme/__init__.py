"""episteme: an LLM-maintained research wiki with passage-level source tracing.

The package is split so that the graph and lint tools import only the standard library and
PyYAML; the PDF, vector, LLM and server modules pull their heavy dependencies lazily.
"""

__version__ = "0.1.0"
