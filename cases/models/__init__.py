"""Model pairs used by the catalogue."""
