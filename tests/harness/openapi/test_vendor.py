"""The JSON documents the OpenSandbox mock serves are the published YAML documents, as Schemathesis reads them."""

from __future__ import annotations

import pytest

from harness.openapi import vendor


@pytest.mark.parametrize(("yaml_name", "json_name"), sorted(vendor.DOCUMENTS.items()))
def test_the_packaged_json_is_the_published_yaml(yaml_name: str, json_name: str) -> None:
    assert (vendor.JSON_DIR / json_name).read_text(encoding="utf-8") == vendor.render(yaml_name), (
        "run: python -m harness.openapi.vendor"
    )
