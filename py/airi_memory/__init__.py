"""airi-memory: conversation memory for AI companions, running inside the web page."""

__version__ = "0.1.0"
