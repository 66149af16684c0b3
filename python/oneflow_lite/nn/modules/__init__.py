"""The layers of ``flow.nn``, one family per file."""
