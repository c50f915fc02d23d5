"""Stage 3, capture: real model output from capture backends over prompt suites, kept as capture records."""
