"""Formats: input files as Arrow, JSON Lines, SQL types, the instants the engine agrees on."""
