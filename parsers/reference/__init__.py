"""Reference engines, one module per engine: its build recipe, how its server is configured per format, and the
adapter its worker serves."""
