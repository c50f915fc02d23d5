"""Stage 1, template: the model catalog, real chat-template sources with provenance, rendering a scenario into a
case."""
