"""Git worktrees for subagents, and what svc measures in them itself (contract §4 Subagent details).

A worktree is made from the repository's current `HEAD` (never the default branch) on its own
branch `svc/{turn}/{name}`, outside the repository under `$SVC_HOME/worktrees/`. Changes are
counted against that commit, uncommitted and untracked files included, through a throw-away
index so the agent's own index is never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from core import config

GIT_TIMEOUT_S = 60


class GitError(Exception):
    pass


def _git(cwd: str | Path, *args: str, env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env={**os.environ, **(env or {})},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]}: {exc}") from exc
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])}: {done.stderr.strip() or done.returncode}")
    return done.stdout


@dataclass(frozen=True)
class Base:
    """A clean repository a worktree can be made from: its top level, `HEAD`, and where in it
    the caller's `cwd` lies (the subagent starts in the same place in its worktree)."""

    toplevel: str
    commit: str
    subdir: str


def clean_base(cwd: str) -> Base | None:
    """The repository of `cwd` when it has a commit and no changes at all; else None."""
    if shutil.which("git") is None:
        return None
    try:
        toplevel = _git(cwd, "rev-parse", "--show-toplevel").strip()
        commit = _git(cwd, "rev-parse", "--verify", "HEAD^{commit}").strip()
        dirty = _git(cwd, "status", "--porcelain", "--untracked-files=all").strip()
    except GitError:
        return None
    if dirty:
        return None
    subdir = os.path.relpath(os.path.realpath(cwd), os.path.realpath(toplevel))
    return Base(toplevel, commit, "" if subdir == "." else subdir)


def root() -> Path:
    return config.svc_home() / "worktrees"


def branch_name(turn_id: str, name: str) -> str:
    return f"svc/{turn_id}/{name}"


def add(base: Base, turn_id: str, name: str) -> Path:
    """A new worktree of `base` on branch `svc/{turn}/{name}`; returns its top level."""
    path = root() / turn_id / name
    path.parent.mkdir(parents=True, exist_ok=True)
    _git(base.toplevel, "worktree", "add", "-b", branch_name(turn_id, name), str(path), base.commit)
    _record_base_branch(base, branch_name(turn_id, name))
    return path


# branch.<branch>.svc-base: the branch a worktree was made from (where a merge goes)
BASE_KEY = "svc-base"


def _record_base_branch(base: Base, branch: str) -> None:
    """Remember in git which branch `HEAD` was (when it still is `base.commit`), so a merge
    knows where to go; `git branch -D` forgets it with the branch."""
    try:
        current = _git(base.toplevel, "symbolic-ref", "-q", "--short", "HEAD").strip()
        head = _git(base.toplevel, "rev-parse", "HEAD").strip()
        if current and head == base.commit:
            _git(base.toplevel, "config", f"branch.{branch}.{BASE_KEY}", current)
    except GitError:
        pass  # detached HEAD: nothing to remember


def remove(toplevel: str, path: str, branch: str) -> None:
    """Remove a worktree and its branch; whatever is already gone is fine."""
    if Path(path).exists():
        try:
            _git(toplevel, "worktree", "remove", "--force", path)
        except GitError:
            shutil.rmtree(path, ignore_errors=True)
    try:
        _git(toplevel, "worktree", "prune")
        _git(toplevel, "branch", "-D", branch)
    except GitError:
        pass


def measure(worktree: str, base_commit: str, branch: str) -> dict[str, object]:
    """What changed in `worktree` since `base_commit`: commits on its branch, and files, lines
    added and removed counting uncommitted and untracked work too."""
    commits = int(_git(worktree, "rev-list", "--count", f"{base_commit}..HEAD").strip() or 0)
    with tempfile.TemporaryDirectory(prefix="svc-index-") as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        _git(worktree, "read-tree", "HEAD", env=index)
        _git(worktree, "add", "-A", ".", env=index)
        numstat = _git(worktree, "diff", "--cached", "--numstat", base_commit, env=index)
    files = insertions = deletions = 0
    for line in numstat.splitlines():
        added, removed, _ = line.split("\t", 2)
        files += 1
        insertions += int(added) if added.isdigit() else 0  # "-" for binary files
        deletions += int(removed) if removed.isdigit() else 0
    return {
        "branch": branch,
        "worktree": worktree,
        "commits": commits,
        "files_changed": files,
        "insertions": insertions,
        "deletions": deletions,
    }
