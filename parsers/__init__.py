"""Parser plug-ins: ``own/`` holds the project's parsers (one module per format), ``reference/`` one module per
engine. The harness finds them by discovery (:mod:`harness.parse.registry`)."""
