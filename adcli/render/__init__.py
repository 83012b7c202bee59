"""Renderers: one per output format. Rich is used here and in the CLI only, never in the engine."""
