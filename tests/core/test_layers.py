"""The layer contract (pyproject.toml [tool.importlinter], docs/layers.md) holds, and catches a new violation.

Each violation is written into a throwaway copy of `apps/` under tmp_path, never into the tree, and
`lint-imports` runs there with the project's own contract.
"""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=cwd,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_with(tmp_path: Path, module: str, source: str) -> Path:
    """A copy of the project's packages and contract, plus `module` (a dotted name under apps) holding `source`."""
    shutil.copytree(ROOT / "apps", tmp_path / "apps", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / Path(*module.split("."))).with_suffix(".py").write_text(source)
    return tmp_path


def test_the_tree_keeps_every_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_app_is_named_in_the_contract():
    """A new app joins the contract in the commit that adds it (docs/layers.md, "Adding an app")."""
    contracts = {
        c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    }
    apps = {f"apps.{path.name}" for path in (ROOT / "apps").iterdir() if (path / "apps.py").exists()}
    lower = set(contracts["lower"]["source_modules"])
    domain = set(contracts["domain"]["modules"])
    assert lower == {"apps.accounts", "apps.events"}
    assert apps == {"apps.core"} | lower | domain
    assert set(contracts["core"]["forbidden_modules"]) == lower | domain
    assert set(contracts["lower"]["forbidden_modules"]) == domain
    assert set(contracts["lower-api"]["source_modules"]) == domain


@pytest.mark.parametrize(
    ("module", "source", "contract", "edge"),
    [
        (
            "apps.core.layer_probe",
            "from apps.patients.models import Patient  # noqa\n",
            "core imports no other app",
            "apps.core.layer_probe -> apps.patients.models",
        ),
        (
            "apps.accounts.layer_probe",
            "from apps.journeys.public import Journey  # noqa\n",
            "accounts and events import no app but core",
            "apps.accounts.layer_probe -> apps.journeys.public",
        ),
        (
            "apps.today.layer_probe",
            "from apps.journeys.api.serializers import JourneySerializer  # noqa\n",
            "domain apps reach each other only through public.py",
            "apps.today.layer_probe -> apps.journeys.api.serializers",
        ),
        (
            "apps.tasks.layer_probe",
            "from apps.appointments.models import Appointment  # noqa\n",
            "domain apps reach each other only through public.py",
            "apps.tasks.layer_probe -> apps.appointments.models",
        ),
        (
            "apps.oauth.layer_probe",
            "from apps.accounts.api.views import SignInView  # noqa\n",
            "never their api",
            "apps.oauth.layer_probe -> apps.accounts.api.views",
        ),
    ],
    ids=[
        "core->patients",
        "accounts->journeys.public",
        "today->journeys.api",
        "tasks->appointments.models",
        "oauth->accounts.api",
    ],
)
def test_a_new_violation_breaks_the_contract(tmp_path, module, source, contract, edge):
    result = lint_imports(copy_with(tmp_path, module, source))
    assert result.returncode == 1, result.stdout + result.stderr
    broken = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken
    assert edge in broken


def test_another_apps_public_module_is_allowed(tmp_path):
    result = lint_imports(
        copy_with(tmp_path, "apps.today.layer_probe", "from apps.journeys.public import Journey  # noqa\n")
    )
    assert result.returncode == 0, result.stdout + result.stderr
