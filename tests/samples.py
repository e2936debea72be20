"""Inputs several test modules share: one small policy and a valid prompt digest."""

PROMPT = "sha256:" + "ab" * 32

POLICY = """\
allow fs:read:/**
allow fs:write:/src/** because "source"
deny fs:write:/src/secrets, /src/secrets/** because "secrets"
tool fs.write needs fs:write:{path}
expect deny fs:write:/src/secrets/key
"""


def bgc(*args: str):  # type: ignore[no-untyped-def]
    """Run the CLI in-process; a traceback or an unexpected exception fails the calling test."""
    from typer.testing import CliRunner

    from bgc.cli import app

    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result
