"""The ``fplus`` command: exit 0 when it worked, 1 when the server refused or failed (one line
with the server's message), 2 for a usage error."""

from __future__ import annotations

import sys

import click
from click.shell_completion import get_completion_class

from .api import ApiError
from .audit import audit
from .cluster_edit import label, set_config
from .clusters import cluster
from .deployments import chart, deploy
from .describe import describe
from .fleet import fleet
from .flux import flux
from .kubeconfig import kube_credential, kubeconfig
from .rollout import rollout
from .secrets import secret
from .session import login, logout, whoami
from .window import window

SHELLS = ("bash", "zsh")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fplus-edge-manager", prog_name="fplus")
def cli() -> None:
    """Operate Factory+ edge clusters: request them, bootstrap them, seal their secrets.

    Log in once with `fplus login URL`; FPLUS_URL, FPLUS_TOKEN, FPLUS_USER/FPLUS_PASSWORD,
    CONFIG_STORE_URL and FPLUS_CA_FILE override the saved session.
    """


@cli.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script: eval "$(fplus completion bash)"."""
    completer = get_completion_class(shell)
    assert completer is not None
    click.echo(completer(cli, {}, "fplus", "_FPLUS_COMPLETE").source())


cli.add_command(login)
cli.add_command(logout)
cli.add_command(whoami)
cluster.add_command(describe)
cluster.add_command(kubeconfig)
cluster.add_command(label)
cluster.add_command(set_config)
cli.add_command(cluster)
cli.add_command(secret)
cli.add_command(deploy)
cli.add_command(chart)
cli.add_command(fleet)
cli.add_command(flux)
cli.add_command(rollout)
cli.add_command(window)
cli.add_command(audit)
cli.add_command(kube_credential)


def _what_next(exc: click.ClickException) -> str:
    """Click's message, and for a usage error where the command's help is."""
    message = exc.format_message().rstrip(".")
    ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    if ctx is None:
        return message
    return f"{message} (see `{ctx.command_path} --help`)"


def main() -> None:
    """Entry point: click's parsing, with ApiError turned into one line and exit 1."""
    try:
        cli.main(standalone_mode=False)
    except ApiError as exc:
        click.echo(f"fplus: {exc}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("fplus: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        click.echo(f"fplus: {_what_next(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
