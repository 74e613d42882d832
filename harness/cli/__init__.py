"""The command line: `main` (the parser and the one error boundary), the shared
options, and one module per command."""
