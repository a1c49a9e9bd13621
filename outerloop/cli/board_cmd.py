"""``outerloop board``: render the climb board from the ledger, optionally serve it.

Serving binds 127.0.0.1 only: the board names runs, issues and costs, which is not
for the whole network; reach it from elsewhere through an SSH tunnel.
"""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

import click

from outerloop.errors import OuterloopError

DEFAULT_PORT = 8765
SERVE_HOST = "127.0.0.1"


def make_server(directory: Path, port: int) -> http.server.ThreadingHTTPServer:
    """A static file server for ``directory`` on loopback; port 0 picks a free one."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    try:
        return http.server.ThreadingHTTPServer((SERVE_HOST, port), handler)
    except OSError as exc:
        raise OuterloopError(f"cannot serve on {SERVE_HOST}:{port} ({exc.strerror}); "
                             f"fix: pick another port with --port") from None


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@click.option("--serve", is_flag=True, help="Serve board/ on 127.0.0.1 until Ctrl-C.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
              show_default=True, help="Port for --serve (0: any free port).")
def board(home: Path | None, serve: bool, port: int) -> None:
    """Render the climb board (index.html, CLIMB.md, status.json) from the ledger."""
    from outerloop.board import write_board
    from outerloop.config import load_settings
    from outerloop.ledger.state import rebuild

    settings = load_settings(home)
    for path in write_board(settings, rebuild(settings.home, save_cache=False)):
        click.echo(str(path))
    if not serve:
        return
    server = make_server(settings.home / "board", port)
    click.echo(f"serving http://{SERVE_HOST}:{server.server_address[1]}/  (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()


COMMANDS: list[click.Command] = [board]
