"""Running metrics over samples: the engine, its journal, and the run configuration."""
