"""The OpenSandbox documents the mock serves: JSON renderings of the published YAML the harness keeps.

``harness/specs/opensandbox/*.yaml`` are the documents as published (their hashes are pinned by a test). The
mock serves JSON without a YAML parser, so it ships each document as JSON in ``mockserver/opensandbox/specs/``:
``python -m harness.openapi.vendor`` writes them from the YAML, and a test checks they are current.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
YAML_DIR = ROOT / "harness" / "specs" / "opensandbox"
JSON_DIR = ROOT / "mockserver" / "opensandbox" / "specs"
#: The published YAML file -> the JSON file the mock serves.
DOCUMENTS = {"lifecycle-1.1.1.yaml": "lifecycle-1.1.1.json", "execd.yaml": "execd.json", "egress.yaml": "egress.json"}


def render(yaml_name: str) -> str:
    """Return the JSON text of a published YAML document (timestamps kept as strings, as Schemathesis reads it)."""
    from schemathesis.core.deserialization import deserialize_yaml

    data = deserialize_yaml((YAML_DIR / yaml_name).read_text(encoding="utf-8"))
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write every JSON rendering next to the mock."""
    del argv
    for yaml_name, json_name in DOCUMENTS.items():
        (JSON_DIR / json_name).write_text(render(yaml_name), encoding="utf-8")
        sys.stdout.write(f"wrote {JSON_DIR / json_name}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
