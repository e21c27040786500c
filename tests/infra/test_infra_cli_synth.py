"""`cdk synth` as the CLI runs it passes cdk-nag and cfn-lint, for every documented context.

Each variant is synthesized once per test process (a session fixture per variant), with the
concrete account and region the CLI gives; its two templates are linted with cfn-lint and the
serverless rules. The subprocess test runs the real CLI without credentials, for the shipped
context and with the Fargate worker, so the path `make synth` takes (cdk.json's app command, the
CLI's environment and its context lookups) is covered too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
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
    cloudwatch_alarm_grants,
    stack_names,
    template_region,
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


def test_every_variant_synthesizes_its_stacks_with_literal_arns(
    variant: str, cli_assembly: Path
) -> None:
    """The synth raised on no cdk-nag error (the fixture) and bound every stack to the account
    and to its region: the CLI's, or with `regions` the one its name ends in."""
    paths = templates(cli_assembly)

    assert [path.name for path in paths] == [
        f"{name}.template.json" for name in stack_names(VARIANTS[variant])
    ]
    for path in paths:
        if path.name.startswith("TaktStateless"):
            assert f":{template_region(path)}:{CLI_ENV['CDK_DEFAULT_ACCOUNT']}:" in (
                path.read_text()
            ), f"{path.name} is not bound to its region and the CLI's account"


def test_every_variant_synthesizes_without_a_context_lookup(cli_assembly: Path) -> None:
    """Nothing asks the CLI to look a value up in the account, which needs credentials.

    In process, a lookup leaves a dummy value and a `missing` entry in the manifest, and the
    synthesis succeeds; the CLI then tries to resolve the entry and, without credentials, fails
    (the Fargate worker's VPC did, for its availability zones).
    """
    manifest = json.loads((cli_assembly / "manifest.json").read_text())

    assert manifest.get("missing", []) == []


EXPECTED_ALARM_GRANTS = {
    ("AWS::SNS::TopicPolicy", "sns:Publish"),
    ("AWS::KMS::Key", "kms:Decrypt"),
    ("AWS::KMS::Key", "kms:GenerateDataKey*"),
}


def test_every_variant_lets_this_accounts_alarms_publish_to_the_alarm_topic(
    cli_assembly: Path,
) -> None:
    assert cloudwatch_alarm_grants(cli_assembly) == EXPECTED_ALARM_GRANTS


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


def test_a_plain_cfn_lint_run_ignores_only_rules_explained_for_every_resource() -> None:
    """`cfn-lint cdk.out/*.template.json` from the root reads .cfnlintrc.yaml: whatever that file
    ignores is ignored here for every resource, with a reason."""
    from cfnlint.config import ConfigFileArgs  # noqa: PLC0415 - cfn-lint is slow to import

    ignored = ConfigFileArgs(config_file=ROOT / ".cfnlintrc.yaml").file_args["ignore_checks"]

    assert ignored
    assert all(CFN_LINT_IGNORED.get(rule, ("",))[0] == ".*" for rule in ignored)


# The real CLI for the shipped context (what `make synth` runs) and for the Fargate worker, whose
# VPC is where a stack bound to an account would ask for a lookup.
# The seed ships the Fargate worker, so the second run synthesizes the worker function instead.
CLI_RUNS = {"default": [], "function-worker": ["-c", "fargateWorker=false"]}


@pytest.mark.skipif(
    not (ROOT / "node_modules" / ".bin" / "cdk").exists(),
    reason="the CDK CLI is installed by `npm ci` (make synth, .ci/run)",
)
@pytest.mark.parametrize("run", sorted(CLI_RUNS))
def test_the_cdk_cli_synthesizes_without_credentials(run: str, tmp_path: Path) -> None:
    """`npx cdk synth` exits 0 with an account but no credentials, bundling as `make synth` does.

    No credentials reach the CLI (none in the environment, empty AWS config files), so any
    lookup it would have to make in the account fails the run, as it would for a new user. The
    layer's bundling installs the locked wheels with uv (from its cache, else PyPI), as
    `make synth` and `cdk deploy` do.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "JSII_SILENCE"))
    }
    env |= CLI_ENV | {
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    # As the README's deploy steps leave a user's shell after `make install && npm ci`: nothing
    # of the checkout on PATH (no venv activated, uv where `make install` put it), so cdk.json's
    # app command and the layer's build must find the venv and uv themselves.
    env["PATH"] = os.pathsep.join(
        entry for entry in env["PATH"].split(os.pathsep) if not entry.startswith(str(ROOT))
    )
    assembly = tmp_path / "cdk.out"
    result = subprocess.run(
        [
            str(ROOT / "node_modules" / ".bin" / "cdk"),
            "synth",
            "--quiet",
            "--no-notices",
            "--output",
            str(assembly),
            *CLI_RUNS[run],
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    assert "b'!!" not in result.stderr, (
        "a synth prints no raw b'...' lines (Node 20's end-of-life banner through jsii)"
    )
    # No region in the environment or the (empty) AWS config: the user is told where it is bound.
    assert "cdk.out is bound to us-east-1" in result.stderr
    assert [path.name for path in templates(assembly)] == [
        "TaktStateful.template.json",
        "TaktStateless.template.json",
    ]
    assert cloudwatch_alarm_grants(assembly) == EXPECTED_ALARM_GRANTS
    assert _unexplained(cfn_lint(templates(assembly)), run) == []
    stateless = json.loads((assembly / "TaktStateless.template.json").read_text())
    services = [r for r in stateless["Resources"].values() if r["Type"] == "AWS::ECS::Service"]
    assert len(services) == (1 if run == "default" else 0), (
        "the seed profile ships the Fargate worker; -c fargateWorker=false synthesizes without it"
    )
