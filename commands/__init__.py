"""lakecat's command line (Typer). Installed as ``lakecat.commands``; thin: resolve, one API call, render."""
