"""Stage 2, corpus: the curated catalog, generated and drift cases, observed and peer case files, random calls
for the sweep."""
