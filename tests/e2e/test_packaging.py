"""What a release ships: the wheel and the sdist built as a packager builds them, installed into a
fresh virtualenv as a user installs them.

The tree is snapshotted first (tracked files, symlinks kept), so the build never writes into the
checkout. `python -m build` makes the sdist and then the wheel from that sdist, so a file the
sdist leaves out fails the wheel too. Each install is then used from a checkout, where the
checkout's own `bgc/` comes first on `sys.path` (`python -m bgc`, the README's library snippet),
and from elsewhere, where only the installed package can answer. Dependencies come from the
pre-commit test's wheelhouse when it can be filled (offline), else from the index.

The unpacked sdist runs a smoke subset of the suite: the tests that read what only the sdist's
extra files hold (the README and docs snippets against examples/ and policies/, the golden
reports, the bad-policy corpus, the codes page), not the whole suite, whose other tests read
nothing beyond the package and would double the run for no added coverage of the sdist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.e2e.test_docs_snippets import blocks
from tests.e2e.test_precommit import wheelhouse

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ["tests/e2e/test_docs_snippets.py", "tests/app/render/test_color.py", "tests/core/policy/test_errors.py",
         "tests/test_codes.py"]  # fmt: skip

pytestmark = [
    pytest.mark.first,  # pip builds and installs twice: one of the longest tests
    pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="the snapshot needs a git checkout"),
]


def tracked() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name and os.path.lexists(ROOT / name)]


def snapshot(into: Path) -> Path:
    """The tracked files as they are in the working tree, links kept as links."""
    for name in tracked():
        source, target = ROOT / name, into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return into


def pip_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("BGC_", "PYTHON"))}
    house = wheelhouse()
    if house is not None:
        env.update(PIP_FIND_LINKS=str(house), PIP_NO_INDEX="1")
    return env


def run(command: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and "Traceback" not in done.stderr, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


def venv(where: Path, *install: str | Path) -> Path:
    run([sys.executable, "-m", "venv", where], where.parent)
    run([where / "bin" / "python", "-m", "pip", "install", "--quiet", *install], where.parent, pip_env())
    return where / "bin" / "python"


LIBRARY_SNIPPET = next(block.body for block in blocks(ROOT / "README.md") if block.lang == "python")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The checkout's snapshot, its sdist and its wheel."""
    work = tmp_path_factory.mktemp("packaging")
    checkout = snapshot(work / "checkout")
    run([sys.executable, "-m", "build", "--outdir", work / "dist", checkout], work, pip_env())
    (sdist,), (wheel,) = (work / "dist").glob("*.tar.gz"), (work / "dist").glob("*.whl")
    return checkout, sdist, wheel


def test_the_wheel_carries_every_package_and_its_data(built: tuple[Path, Path, Path]) -> None:
    checkout, _, wheel = built
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(init.relative_to(checkout)) for init in (checkout / "bgc").rglob("__init__.py")}
    data = {f"bgc/grammar/{p.name}" for p in (checkout / "grammar").glob("*.lark")}
    data |= {f"bgc/policies/{p.name}" for p in (checkout / "policies").glob("*.bgp")} | {"bgc/py.typed"}
    assert packages | data <= names, sorted((packages | data) - names)
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


@pytest.mark.parametrize("editable", [False, True], ids=["pip install .", "pip install -e ."])
def test_an_install_works_from_the_checkout_and_from_elsewhere(built: tuple[Path, Path, Path], editable: bool,
                                                               tmp_path: Path) -> None:  # fmt: skip
    checkout, _, wheel = built
    python = venv(tmp_path / "venv", *(["-e", checkout] if editable else [wheel]))
    help_text = run([python, "-m", "bgc", "--help"], checkout).stdout
    assert "Usage: python -m bgc" in help_text
    assert "policies/default.bgp: " in run([python, "-m", "bgc", "check", "policies/default.bgp"], checkout).stdout
    run([python, "-c", LIBRARY_SNIPPET], checkout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = run([python, "-c", "import bgc, os; print(os.path.dirname(bgc.__file__))"], elsewhere).stdout.strip()
    assert (Path(where) == checkout / "bgc") is editable
    bundled = Path(where) / "policies" / "default.bgp"
    assert "all checks passed" in run([python.parent / "bgc", "check", bundled], elsewhere).stdout


def test_the_sdist_holds_what_the_tests_read_and_they_pass(built: tuple[Path, Path, Path], tmp_path: Path) -> None:
    checkout, sdist, _ = built
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (unpacked,) = tmp_path.iterdir()
    read_by_tests = [name for name in tracked() if name.startswith(("tests/", "examples/", "docs/", "policies/", "grammar/"))]
    missing = [name for name in read_by_tests + ["README.md", "LICENSE", "bgc.toml"] if not (unpacked / name).exists()]
    assert not missing, missing
    # the sdist installed as its users install it, and the tests run by that interpreter: the
    # commands they start are then the sdist's own (`bgc init` registers `python -I`, which no
    # PYTHONPATH reaches). The test tools are lent from this run's environment, after the sdist's.
    python = venv(tmp_path / "venv", "-e", unpacked)
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], unpacked).stdout.strip()
    (Path(site) / "zz-test-tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = run([python, "-I", "-c", "import bgc; print(bgc.__file__)"], unpacked).stdout.strip()
    assert Path(where) == unpacked / "bgc" / "__init__.py"  # the sdist's code, not this checkout's
    run([python, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *SMOKE], unpacked, pip_env())
