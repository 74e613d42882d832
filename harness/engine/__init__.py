"""From closure to outcome table: the world, the sandbox, exploration, tracing."""
