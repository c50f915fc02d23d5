"""Optional integrations the core never imports: the pytest plugin and the micro fixture model."""
