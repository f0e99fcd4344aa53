"""Command-line interface (Typer + rich); thin commands over the library."""
