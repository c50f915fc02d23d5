"""Analysis of failures: minimal repros and fault classes."""
