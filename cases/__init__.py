"""The bundled parity catalogue."""
