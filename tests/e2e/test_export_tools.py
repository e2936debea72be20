"""Exports run by the real tools: Anthropic's sandbox runtime (``srt``, from npm) confines a real
command with the settings ``bgc export`` wrote; its own schema accepts them unchanged; and
Claude Code's exported settings type-check against the settings type its Agent SDK publishes
(``tsc``; no JSON schema of Claude Code's settings is published on npm).

The packages come from the npm registry, pinned: ``.ci/run`` installs them and names them in
``BGC_SANDBOX_RUNTIME`` and ``BGC_CLAUDE_SETTINGS_TYPES``; elsewhere the fixture installs them
once into a cache under the temporary directory, and the test is skipped (failed under CI) only
when npm or the runtime's own dependencies (ripgrep, socat, bubblewrap) are not there.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.samples import missing_in_ci

SANDBOX_RUNTIME = "@anthropic-ai/sandbox-runtime@0.0.83"
TYPESCRIPT = "typescript@5.9.3"
AGENT_SDK = "@anthropic-ai/claude-agent-sdk@0.3.328"
POLICY = """\
deny fs:*:/**/.env because "secrets"
deny fs:*:/.git, /.git/** because "VCS internals"
allow fs:read:/**
allow fs:write:/src/**, /tests/**
allow net:connect:https://pypi.org/**
"""


def _cache() -> Path:
    return Path(tempfile.gettempdir()) / "bgc-test-npm"


def _npm(*args: str, cwd: Path) -> None:
    if shutil.which("npm") is None:
        missing_in_ci("npm is not installed")
    try:
        subprocess.run(["npm", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        missing_in_ci(f"npm could not fetch a package ({' '.join(args)}): {getattr(error, 'stderr', '') or error}")


def _installed(name: str, install) -> Path:  # type: ignore[no-untyped-def]
    """A directory under the cache, filled once by ``install(directory)`` (under a lock: test
    workers share it), then reused."""
    cache = _cache()
    cache.mkdir(exist_ok=True)
    target = cache / name
    with open(cache / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".done").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            install(target)
            (target / ".done").write_text("")
    return target


@pytest.fixture(scope="session")
def sandbox_runtime() -> Path:
    """The sandbox runtime's package directory (``dist/cli.js`` is ``srt``)."""
    given = os.environ.get("BGC_SANDBOX_RUNTIME")
    if given:
        return Path(given)
    prefix = _installed("sandbox-runtime", lambda d: _npm("install", "--no-audit", "--no-fund", "--prefix", str(d), SANDBOX_RUNTIME, cwd=d))
    return prefix / "node_modules" / "@anthropic-ai" / "sandbox-runtime"


@pytest.fixture(scope="session")
def claude_settings_types() -> Path:
    """A directory holding ``typescript/`` and the Agent SDK's ``package/`` (its ``sdk.d.ts``)."""
    given = os.environ.get("BGC_CLAUDE_SETTINGS_TYPES")
    if given:
        return Path(given)

    def install(directory: Path) -> None:
        for spec, into in ((TYPESCRIPT, "typescript"), (AGENT_SDK, "sdk")):
            _npm("pack", "--silent", spec, cwd=directory)
            tarball = next(directory.glob("*.tgz"))
            (directory / into).mkdir()
            subprocess.run(["tar", "-xzf", str(tarball), "-C", into], cwd=directory, check=True)
            tarball.unlink()

    return _installed("claude-settings-types", install)


def _project(root: Path) -> Path:
    for name in ("src/app.py", "tests/test_app.py", "docs/index.md", ".env", "src/.env", ".git/config"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"content of {name}\n")
    (root / "policy.bgp").write_text(POLICY)
    return root


def _export(project: Path, target: str, *extra: str) -> str:
    done = subprocess.run(
        ["bgc", "export", "-t", target, "-p", "policy.bgp", "-o", "-", *extra],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_srt_confines_a_real_command_to_the_exported_grants(tmp_path: Path, sandbox_runtime: Path) -> None:
    """Inside the project only src/ and tests/ are written; the secrets, .git, the home directory
    and the rest of the project are not; what the plan lets be read is."""
    for program in ("bwrap", "rg", "socat"):
        if shutil.which(program) is None:
            missing_in_ci(f"the sandbox runtime needs {program} (Debian's bubblewrap, ripgrep, socat)")
    project = _project(tmp_path / "project")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    settings = tmp_path / "srt-settings.json"
    settings.write_text(_export(project, "sandbox-runtime", "--runtime", str(sandbox_runtime)))
    script = f"""
        cat src/app.py
        echo written > src/new.py && echo src-written
        echo written > tests/new.py && echo tests-written
        echo written > docs/new.md 2>/dev/null || echo docs-refused
        cat .env 2>/dev/null || echo env-refused
        cat src/.env 2>/dev/null || echo src-env-refused
        echo x > src/.env 2>/dev/null || echo src-env-write-refused
        cat .git/config 2>/dev/null || echo git-refused
        cat {home}/.ssh/id_rsa 2>/dev/null || echo home-refused
    """
    done = subprocess.run(
        ["node", str(sandbox_runtime / "dist" / "cli.js"), "--settings", str(settings), "--", "sh", "-c", script],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "content", "of", "src/app.py", "src-written", "tests-written", "docs-refused", "env-refused",
        "src-env-refused", "src-env-write-refused", "git-refused", "home-refused",
    ], done.stderr  # fmt: skip
    assert (project / "src" / "new.py").read_text() == "written\n" and (project / "tests" / "new.py").exists()
    assert not (project / "docs" / "new.md").exists() and (project / "src" / ".env").read_text() == "content of src/.env\n"


def test_srt_schema_accepts_the_export_unchanged(tmp_path: Path, sandbox_runtime: Path) -> None:
    """The runtime's own ``SandboxRuntimeConfigSchema`` parses the export to exactly itself (no
    key dropped as unknown), and refuses a misspelt key in the same document."""
    project = _project(tmp_path / "project")
    document = json.loads(_export(project, "sandbox-runtime"))
    check = f"""
        const {{ SandboxRuntimeConfigSchema }} = await import({json.dumps(str(sandbox_runtime / "dist" / "index.js"))});
        const given = JSON.parse(process.argv[1]);
        const parsed = SandboxRuntimeConfigSchema.safeParse(given);
        if (!parsed.success) {{ console.log("invalid " + JSON.stringify(parsed.error.issues)); process.exit(1); }}
        const same = JSON.stringify(parsed.data.filesystem) === JSON.stringify(given.filesystem)
          && JSON.stringify(parsed.data.network.allowedDomains) === JSON.stringify(given.network.allowedDomains);
        console.log(same ? "same" : "changed " + JSON.stringify(parsed.data));
    """
    for data, expected in ((document, "same"), ({**document, "network": {"allowedDomains": ["https://pypi.org/"]}}, "invalid")):
        done = subprocess.run(["node", "--input-type=module", "-e", check, json.dumps(data)], capture_output=True, text=True, timeout=60)
        assert done.stdout.startswith(expected), done.stdout + done.stderr


def test_claude_code_settings_type_check(tmp_path: Path, claude_settings_types: Path) -> None:
    """The exported ``sandbox`` settings are a ``Settings`` of the Agent SDK's published types,
    every key of ``sandbox`` one the type declares (its index signature left out); a misspelt
    key fails the same check."""
    project = _project(tmp_path / "project")
    document = json.loads(_export(project, "claude-code"))
    sdk = claude_settings_types / "sdk" / "package" / "sdk.js"
    tsc = claude_settings_types / "typescript" / "package" / "bin" / "tsc"
    (tmp_path / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"strict": True, "noEmit": True, "skipLibCheck": True, "module": "nodenext",
                            "moduleResolution": "nodenext", "target": "es2022", "types": []},
        "files": ["check.ts"],
    }))  # fmt: skip
    for data, passes in ((document, True), ({"sandbox": {**document["sandbox"], "filesytem": {}}}, False)):
        (tmp_path / "check.ts").write_text(
            f"import type {{ Settings }} from {json.dumps(str(sdk))};\n"
            "type Sandbox = NonNullable<Settings['sandbox']>;\n"
            "type Declared = keyof { [K in keyof Sandbox as string extends K ? never : K]: Sandbox[K] };\n"
            f"const settings = {json.dumps(data)} satisfies Settings;\n"
            "const keys: Declared[] = Object.keys(settings.sandbox) as (keyof typeof settings.sandbox)[];\n"
            "export default keys;\n"
        )
        done = subprocess.run(["node", str(tsc), "-p", str(tmp_path)], capture_output=True, text=True, timeout=300)
        assert (done.returncode == 0) == passes, done.stdout + done.stderr
