"""``kapstan convert -f FILE``: Karpenter v1alpha5 manifests to the v1 objects kapstan serves, as YAML.

The output keeps every other document of the input unchanged, so ``kapstan convert -f old.yaml >
new.yaml`` gives a file ``kapstan simulate`` and ``kubectl apply`` take as it is; above each converted
object a comment says what it came from and what changed shape or has no v1 equivalent.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import yaml

from kapstan.api.yaml_loader import load_yaml_documents, one_line
from kapstan.convert.provisioner import Converted, convert


@click.command("convert")
@click.option(
    "-f",
    "--filename",
    "files",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Manifest file with v1alpha5 Provisioners (repeatable).",
)
def convert_command(files: Sequence[Path]) -> None:
    """Turn karpenter.sh/v1alpha5 Provisioners (and their providerRef) into NodePools and ClusterAPINodeClasses."""
    documents: list[dict[str, Any]] = []
    for path in files:
        try:
            found = list(load_yaml_documents(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as error:
            click.echo(f"error: {path}: cannot read: {error}", err=True)
            sys.exit(2)
        except yaml.YAMLError as error:
            click.echo(f"error: {path}: invalid YAML: {one_line(error)}", err=True)
            sys.exit(2)
        for index, document in enumerate(found, start=1):
            if document is None:
                continue
            if not isinstance(document, dict):
                click.echo(f"error: {path}, document {index}: expected an object", err=True)
                sys.exit(2)
            documents.append(document)
    click.echo(render(convert(documents)), nl=False)


def render(converted: Sequence[Converted]) -> str:
    """The documents as one YAML stream, each converted one under its comment."""
    parts = []
    for item in converted:
        lines = [f"# Converted by kapstan convert from {item.source}."] if item.source else []
        lines += [f"# {note}" for note in item.notes]
        body = yaml.safe_dump(item.document, sort_keys=False) if item.document else ""
        parts.append("\n".join(lines) + ("\n" if lines else "") + body)
    return "---\n".join(parts)
