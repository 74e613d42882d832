"""One module per subcommand: `register(subparsers)` and a handler returning an exit code."""
