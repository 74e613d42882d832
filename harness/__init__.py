"""harness: see which configurations change their resolved override between git revisions."""

__version__ = "0.1.0"
