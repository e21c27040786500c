"""The console's job form offers the API's own choices and defaults: `console/js/contract.js`
reads them from the OpenAPI document the API serves, run here under node against
`docs/openapi.json`, and the form writes no choice list by hand (issue 30: the console offered
lists of its own, which drift from the API's)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from takt.api.models import JobCreate
from tests.support.contract import DOCUMENT, job_fields

CONSOLE = Path(__file__).resolve().parents[3] / "console" / "js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="no node to run the console's JavaScript")

RUN = """
import { readFileSync } from "node:fs";
import { choicesOf, defaultsOf, fieldsOf } from "%s";
const document = JSON.parse(readFileSync(%s, "utf-8"));
const [choices, defaults, fields] = [choicesOf(document), defaultsOf(document), fieldsOf(document)];
console.log(JSON.stringify({ choices, defaults, fields }));
"""


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What contract.js reads from the committed document (copied as .mjs: node reads it as the
    browser does, a module, whatever its version's default for .js)."""
    module = tmp_path_factory.mktemp("console") / "contract.mjs"
    shutil.copyfile(CONSOLE / "contract.js", module)
    assert NODE is not None
    script = RUN % (module.as_uri(), json.dumps(str(DOCUMENT)))
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def test_the_console_reads_every_choice_of_a_create_from_the_contract(
    read: dict[str, Any],
) -> None:
    expected = {field: values for field, values in job_fields("JobCreate") if values}

    assert read["choices"] == expected, "the console offers every choice the API takes"


def test_the_job_form_writes_no_choice_list_by_hand(read: dict[str, Any]) -> None:
    form = (CONSOLE / "jobform.js").read_text(encoding="utf-8")
    lists = re.findall(r"choose\(([^,]+),", form)
    named = {re.sub(r'^choices(?:\.|\[")([^"\]]+)"?\]?$', r"\1", a) for a in lists}

    assert lists, "the form has selects"
    assert [a for a in lists if not a.startswith("choices")] == [], (
        "the console offers every choice the API takes: a select's options are the contract's"
    )
    assert named <= set(read["choices"]), f"each select names a field with choices: {named}"


def test_a_new_job_starts_from_the_api_s_defaults(read: dict[str, Any]) -> None:
    defaults = JobCreate.model_construct().model_dump(mode="json")
    given = {k: v for k, v in read["defaults"].items() if v is not None}

    assert given == {k: v for k, v in defaults.items() if k in given}, (
        "a new job's form starts from the API's defaults"
    )
    assert {"overlap", "catchup", "priority", "retry", "dst"} <= set(given)


def test_the_console_knows_how_to_edit_every_field_of_a_create(read: dict[str, Any]) -> None:
    kinds = {f["name"]: f["kind"] for f in read["fields"]}

    assert set(kinds) == {field.split(".")[0] for field, _ in job_fields("JobCreate")}, (
        "a new job field reaches the console's form: every field of a create has a control"
    )
    assert (kinds["overlap"], kinds["timeout_sec"], kinds["run_late"]) == (
        "choice",
        "number",
        "flag",
    )
    assert (kinds["name"], kinds["notify"]) == ("text", "json")
