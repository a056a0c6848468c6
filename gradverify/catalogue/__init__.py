"""The check catalogue."""
