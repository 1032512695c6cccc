"""scripts/check-imports.py (run by `make lint`): circles counted through TYPE_CHECKING and
function-local imports, and every import inside a function saying why, at most 40 of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check-imports.py"


def check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_product_passes() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stdout
    assert "import circles (TYPE_CHECKING and function-local imports counted): 0" in done.stdout


def test_a_circle_closed_by_a_type_checking_import_fails(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/a.py": "from core import b\n",
            "core/b.py": (
                "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from core.a import X\n"
            ),
        },
    )
    done = check(root)
    assert done.returncode == 1
    assert "core.a -> core.b -> core.a" in done.stdout


def test_a_circle_closed_inside_a_function_fails(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/a.py": "from core.b import f\n",
            "core/b.py": "def f():\n    from core import a  # why: to close a circle\n",
        },
    )
    done = check(root)
    assert done.returncode == 1
    assert "core.a -> core.b -> core.a" in done.stdout


def test_a_local_import_without_a_reason_fails(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/a.py": "def f():\n    import json  # noqa: PLC0415\n",
        },
    )
    done = check(root)
    assert done.returncode == 1
    assert "core/a.py:2: no comment saying why it is inside a function" in done.stdout


def test_a_reason_on_the_line_above_a_run_of_imports_counts_for_each(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/a.py": (
                "def f():\n"
                "    # Put off: slow to import.\n"
                "    import json\n"
                "    import sqlite3\n"
                "\n"
                "    from core import b\n"
            ),
            "core/b.py": "",
        },
    )
    done = check(root)
    assert done.returncode == 0, done.stdout
    assert "function-local imports in product code: 3" in done.stdout


def test_more_than_forty_fails_and_tests_and_migrations_are_not_counted(tmp_path: Path) -> None:
    many = "".join(f"def f{n}():\n    import json  # put off\n" for n in range(41))
    root = tree(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/a.py": many,
            "core/migrations/0001_initial.py": "def f():\n    import json\n",
            "tests/test_a.py": "def f():\n    import json\n",
        },
    )
    done = check(root)
    assert done.returncode == 1
    assert "function-local imports in product code: 41 (at most 40)" in done.stdout
    assert "no comment" not in done.stdout
