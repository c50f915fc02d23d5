"""Stage 5, score: verdicts (strict, drift outcomes, round trip, captures) and the runner that parses and
scores a case in every mode."""
