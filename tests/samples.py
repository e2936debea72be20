"""Inputs several test modules share: one small policy and a valid prompt digest."""

PROMPT = "sha256:" + "ab" * 32

POLICY = """\
allow fs:read:/**
allow fs:write:/src/** because "source"
deny fs:write:/src/secrets, /src/secrets/** because "secrets"
tool fs.write needs fs:write:{path}
expect deny fs:write:/src/secrets/key
"""
