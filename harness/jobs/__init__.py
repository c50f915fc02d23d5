"""What each command runs: eval, all-models, check, baseline and gate, sweep."""
