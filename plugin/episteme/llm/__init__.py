"""Claude through the ``anthropic`` SDK, with the offline fallback and the untrusted-text wrapper
that keeps paper text from becoming instructions."""
