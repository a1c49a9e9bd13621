"""``outerloop board``: render the climb board from the ledger, optionally serve it.

Serving binds 127.0.0.1 unless ``--bind`` says otherwise: the board names runs, issues
and costs, which is not for the whole network; reach it from elsewhere through an SSH
tunnel (or bind another address knowingly: the command then says who can read it).
"""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

import click

from outerloop.errors import OuterloopError

DEFAULT_PORT = 8765
SERVE_HOST = "127.0.0.1"


def make_server(directory: Path, port: int,
                host: str = SERVE_HOST) -> http.server.ThreadingHTTPServer:
    """A static file server for ``directory`` on ``host`` (loopback by default); port 0
    picks a free one."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    try:
        return http.server.ThreadingHTTPServer((host, port), handler)
    except (OSError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise OuterloopError(f"cannot serve on {host}:{port} ({reason}); fix: pick another "
                             f"port with --port or another address with --bind") from None


def is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@click.option("--serve", is_flag=True, help="Serve board/ (on 127.0.0.1) until Ctrl-C.")
@click.option("--bind", default=SERVE_HOST, show_default=True, metavar="ADDRESS",
              help="Address for --serve; anything but loopback exposes the board.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
              show_default=True, help="Port for --serve (0: any free port).")
def board(home: Path | None, serve: bool, bind: str, port: int) -> None:
    """Render the climb board (index.html, CLIMB.md, status.json) from the ledger."""
    from outerloop.board import write_board
    from outerloop.config import load_settings
    from outerloop.ledger.book import rebuild

    settings = load_settings(home)
    for path in write_board(settings, rebuild(settings.home, save_cache=False)):
        click.echo(str(path))
    if not serve:
        return
    server = make_server(settings.home / "board", port, bind)
    if not is_loopback(bind):
        click.echo(f"warning: serving on {bind}, not loopback: anyone who can reach this "
                   f"address can read the board", err=True)
    click.echo(f"serving http://{bind}:{server.server_address[1]}/  (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()


COMMANDS: list[click.Command] = [board]
