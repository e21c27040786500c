"""`cdk synth` as the CLI runs it passes cdk-nag and cfn-lint, for every documented context.

Each variant is synthesized once per test process (a session fixture per variant), with the
concrete account and region the CLI gives; its two templates are linted with cfn-lint and the
serverless rules. The subprocess test runs the real CLI once, for the shipped context, so the
path `make synth` takes (cdk.json's app command, the CLI's environment) is covered too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.infra.cli_synth import (
    CFN_LINT_IGNORED,
    CFN_LINT_IGNORED_BY_VARIANT,
    CLI_ENV,
    ROOT,
    VARIANTS,
    LintFinding,
    cfn_lint,
    templates,
)


@pytest.fixture(scope="session", params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="session")
def cli_assembly(variant: str, cli_assemblies: Callable[[str], Path]) -> Path:
    return cli_assemblies(variant)


def _unexplained(findings: list[LintFinding], variant: str = "default") -> list[LintFinding]:
    ignored = [CFN_LINT_IGNORED, CFN_LINT_IGNORED_BY_VARIANT.get(variant, {})]
    return [
        finding
        for finding in findings
        if not any(
            finding.rule in rules and re.fullmatch(rules[finding.rule][0], finding.resource)
            for rules in ignored
        )
    ]


def test_every_variant_synthesizes_two_stacks_with_literal_arns(cli_assembly: Path) -> None:
    """The synth raised on no cdk-nag error (the fixture) and bound both stacks to the account."""
    names = [path.name for path in templates(cli_assembly)]
    stateless = (cli_assembly / "TaktStateless.template.json").read_text()

    assert names == ["TaktStateful.template.json", "TaktStateless.template.json"]
    assert f":{CLI_ENV['CDK_DEFAULT_REGION']}:" in stateless


def test_every_variant_passes_cfn_lint_and_the_serverless_rules(
    variant: str, cli_assembly: Path
) -> None:
    findings = cfn_lint(templates(cli_assembly))

    assert _unexplained(findings, variant) == []


def test_cfn_lint_reports_what_it_is_not_told_to_ignore(tmp_path: Path) -> None:
    """The lint run is live: a queue without a redrive policy is an unexplained finding."""
    template = tmp_path / "bad.template.json"
    template.write_text('{"Resources": {"Lonely": {"Type": "AWS::SQS::Queue", "Properties": {}}}}')

    findings = _unexplained(cfn_lint([template]))

    assert [(finding.rule, finding.resource) for finding in findings] == [("ES6000", "Lonely")]


def test_every_ignored_cfn_lint_rule_gives_a_reason() -> None:
    by_variant = [rule for rules in CFN_LINT_IGNORED_BY_VARIANT.values() for rule in rules.values()]

    assert all(len(reason) > 40 for _, reason in [*CFN_LINT_IGNORED.values(), *by_variant])


@pytest.mark.skipif(
    not (ROOT / "node_modules" / ".bin" / "cdk").exists(),
    reason="the CDK CLI is installed by `npm ci` (make synth, .ci/run)",
)
def test_the_cdk_cli_synthesizes_the_shipped_app(tmp_path: Path) -> None:
    """`npx cdk synth` with the CLI's environment exits 0, bundling the layer as `make synth` does.

    The layer's bundling installs the locked wheels with uv (from its cache, else PyPI), as
    `make synth` and `cdk deploy` do.
    """
    env = os.environ | CLI_ENV
    # As `make synth` sets it: the venv's python3 for cdk.json's app command, uv for the layer.
    env["PATH"] = os.pathsep.join(
        [str(Path(sys.executable).parent), str(ROOT / ".tools" / "bin"), env["PATH"]]
    )
    result = subprocess.run(
        [
            str(ROOT / "node_modules" / ".bin" / "cdk"),
            "synth",
            "--quiet",
            "--no-notices",
            "--output",
            str(tmp_path / "cdk.out"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    assert sorted(path.name for path in (tmp_path / "cdk.out").glob("*.template.json")) == [
        "TaktStateful.template.json",
        "TaktStateless.template.json",
    ]
