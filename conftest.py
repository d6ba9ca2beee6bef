"""Root conftest: kept tiny. The plugin is loaded through its entry point."""
