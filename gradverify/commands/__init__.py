"""What each CLI command does once its flags are parsed: one module per command, each a
function returning an exit code (cli.py holds only the Typer definitions)."""
