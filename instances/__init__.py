"""Instance schema, loaders, generators, bundled suites and data."""
