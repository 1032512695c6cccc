"""Diff review (contract §10): what a subagent or a session changed, and merging or discarding a
subagent's branch.

Git is the source of truth: every answer comes from `git` itself. Changes are counted against the
base commit with uncommitted and untracked files included, through a throw-away index
(`GIT_INDEX_FILE`) so the worktree's own index is never touched. Renames are listed as a deletion
and an addition (`--no-renames`), so each file is one row with its `git diff --numstat` counts;
a binary file has `binary: true` and no line counts.

`merge` brings a subagent's branch into the branch its worktree was made from (recorded by
`worktrees.add` in the branch's config) without ever leaving that branch, or a work tree it is
checked out in, different from how it was unless the merge succeeded.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from core.errors import Conflict, DomainError, NotFound
from sessions_app.models import Session
from subagents_app import subagents, worktrees
from subagents_app.models import Subagent

MAX_PATCH_CHARS = 5_000_000
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
RUNNING = ("pending", "starting", "running")
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "svc",
    "GIT_AUTHOR_EMAIL": "svc@localhost",
    "GIT_COMMITTER_NAME": "svc",
    "GIT_COMMITTER_EMAIL": "svc@localhost",
}
_merge_lock = threading.Lock()  # one merge at a time: git's own locks would refuse the second


class MergeConflict(Conflict):
    """A merge that stopped on conflicts (and was aborted); `files` are the conflicting paths."""

    def __init__(self, message: str, files: list[str]) -> None:
        super().__init__(message)
        self.files = files


def _run(
    cwd: str | Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=worktrees.GIT_TIMEOUT_S,
            env={**os.environ, **(env or {})},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise worktrees.GitError(f"git {args[0]}: {exc}") from exc


def _git(cwd: str | Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = _run(cwd, *args, env=env)
    if done.returncode != 0:
        why = done.stderr.strip() or done.returncode
        raise worktrees.GitError(f"git {' '.join(args[:2])}: {why}")
    return done.stdout


# --- diffs ---------------------------------------------------------------------------------------


def changes(worktree: str | Path, base: str) -> dict[str, Any]:
    """Files changed in `worktree` against commit `base` (committed, uncommitted and untracked),
    with their counts and the unified diff."""
    with tempfile.TemporaryDirectory(prefix="svc-index-") as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        if _run(worktree, "rev-parse", "--verify", "-q", "HEAD").returncode == 0:
            _git(worktree, "read-tree", "HEAD", env=index)
        _git(worktree, "add", "-A", ":/", env=index)
        diff = ("diff", "--cached", "--no-renames", "--no-ext-diff", "--no-color")
        numstat = _git(worktree, *diff, "-z", "--numstat", base, env=index)
        names = _git(worktree, *diff, "-z", "--name-status", base, env=index)
        patch = _git(worktree, *diff, "--patch", base, env=index)
    return {"files": _files(numstat, names), **_patch(patch)}


def _files(numstat: str, names: str) -> list[dict[str, Any]]:
    fields = names.split("\0")
    status = {fields[i + 1]: fields[i][:1] for i in range(0, len(fields) - 1, 2)}
    files = []
    for entry in numstat.split("\0"):
        if not entry:
            continue
        added, removed, path = entry.split("\t", 2)
        binary = added == "-"
        files.append(
            {
                "path": path,
                "status": status.get(path, "M"),
                "binary": binary,
                "insertions": None if binary else int(added),
                "deletions": None if binary else int(removed),
            }
        )
    return files


def _patch(text: str) -> dict[str, Any]:
    if len(text) <= MAX_PATCH_CHARS:
        return {"patch": text, "patch_truncated": False}
    return {"patch": text[:MAX_PATCH_CHARS], "patch_truncated": True}


def subagent_get(run_id: str) -> Subagent:
    """A subagent run by its id, or a unique prefix of it (at least 4 characters)."""
    key = (run_id or "").strip().lower()
    try:
        return Subagent.objects.select_related("turn").get(pk=uuid.UUID(key))
    except (ValueError, Subagent.DoesNotExist):
        pass
    found = []
    if len(key) >= 4 and all(c in "0123456789abcdef-" for c in key):
        found = list(Subagent.objects.select_related("turn").filter(id__startswith=key)[:2])
    if len(found) == 1:
        return found[0]
    if found:
        raise DomainError(f"subagent id prefix {run_id!r} is ambiguous; give more of the id")
    raise NotFound(
        f"no subagent {run_id!r}; use an id from GET /api/subagent-turns (subagents[].id)"
    )


def _worktree_run(run: Subagent) -> str:
    """The top level of a run's worktree; refusals for runs that never had one."""
    if not run.branch or not run.turn.repo or not run.turn.base_commit:
        raise DomainError(
            f"subagent {run.name!r} ran without a git worktree (brainstorming, or its cwd was not "
            "a clean git repository): review its session instead, GET /api/sessions/"
            f"{run.session_id}/diff"
        )
    return subagents.worktree_of(run)


def _branch_exists(repo: str, branch: str) -> bool:
    return _run(repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").returncode == 0


def subagent_diff(run: Subagent) -> dict[str, Any]:
    worktree = _worktree_run(run)
    base, repo = run.turn.base_commit, run.turn.repo
    if Path(worktree).is_dir():
        found = changes(worktree, base)
    elif _branch_exists(repo, run.branch):  # worktree gone, branch kept: its commits only
        diff = ("diff", "--no-renames", "--no-ext-diff", "--no-color", base, run.branch)
        found = {
            "files": _files(
                _git(repo, *diff, "-z", "--numstat"), _git(repo, *diff, "-z", "--name-status")
            ),
            **_patch(_git(repo, *diff, "--patch")),
        }
    else:
        raise NotFound(f"subagent {run.name!r}: its worktree and branch {run.branch} are gone")
    return {"base": base, "branch": run.branch, **found}


def session_diff(session: Session) -> dict[str, Any]:
    """A subagent's session: its worktree against the turn's base; any other session whose
    workspace is in a git repository: that repository against its `HEAD`."""
    run = Subagent.objects.select_related("turn").filter(session=session).first()
    if run is not None and run.branch and run.turn.repo:
        return subagent_diff(run)
    workspace = Path(session.workspace)
    if not workspace.is_dir():
        raise DomainError(f"the session's workspace {session.workspace} is not a directory (gone?)")
    top = _run(workspace, "rev-parse", "--show-toplevel")
    if top.returncode != 0 or not top.stdout.strip():
        raise DomainError(
            f"the session's workspace {session.workspace} is not in a git repository: "
            "there is nothing to diff against"
        )
    toplevel = top.stdout.strip()
    head = _run(toplevel, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    base = head.stdout.strip() if head.returncode == 0 else EMPTY_TREE
    branch = _run(toplevel, "symbolic-ref", "-q", "--short", "HEAD").stdout.strip()
    return {"base": base, "branch": branch, **changes(toplevel, base)}


# --- merge and discard ---------------------------------------------------------------------------


def base_branch(run: Subagent) -> str:
    """The branch the run's worktree was made from: as `worktrees.add` recorded it, else the
    repository's current branch when the base commit is in it."""
    repo, branch = run.turn.repo, run.branch
    recorded = _run(repo, "config", "--get", f"branch.{branch}.{worktrees.BASE_KEY}").stdout.strip()
    if recorded:
        return recorded
    current = _run(repo, "symbolic-ref", "-q", "--short", "HEAD").stdout.strip()
    ancestor = _run(repo, "merge-base", "--is-ancestor", run.turn.base_commit, current or "HEAD")
    if current and current != branch and ancestor.returncode == 0:
        return current
    raise Conflict(
        f"svc did not record which branch {branch} was made from, and the repository's current "
        "branch does not contain its base commit: merge it by hand (git merge " + branch + ")"
    )


def _checked_out_at(repo: str, branch: str) -> str | None:
    """The work tree `branch` is checked out in, if any."""
    path = None
    for line in _git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = line.removeprefix("worktree ")
        elif line == f"branch refs/heads/{branch}":
            return path
    return None


def _identity(cwd: str) -> dict[str, str]:
    """A merge commit needs a committer: the user's own, else svc's."""
    return {} if _run(cwd, "var", "GIT_COMMITTER_IDENT").returncode == 0 else _FALLBACK_IDENTITY


def _merge_in(tree: str, branch: str, message: str) -> bool:
    """`git merge` of `branch` in work tree `tree`: fast-forward when possible, else a merge
    commit; on conflict the merge is aborted and MergeConflict names the files. Returns whether
    it was a fast-forward."""
    if _run(tree, "merge", "--ff-only", "--no-edit", branch).returncode == 0:
        return True
    done = _run(tree, "merge", "--no-ff", "--no-edit", "-m", message, branch, env=_identity(tree))
    if done.returncode == 0:
        return False
    unmerged = _run(tree, "diff", "--name-only", "-z", "--diff-filter=U").stdout
    files = [f for f in unmerged.split("\0") if f]
    _run(tree, "merge", "--abort")
    if files:
        named = ", ".join(files)
        raise MergeConflict(f"merging {branch} conflicts in {named}; nothing was changed", files)
    raise Conflict(f"git merge {branch} failed: {(done.stderr or done.stdout).strip()}")


def merge(run: Subagent) -> dict[str, Any]:
    """Bring the run's work into the branch its worktree was made from: what it left uncommitted
    (agents edit files and rarely commit) is committed on its branch first, so the merge takes
    it; on a conflict that commit is undone and nothing else has changed."""
    worktree = _worktree_run(run)
    if run.status in RUNNING:
        raise Conflict(
            f"subagent {run.name!r} is {run.status}: merge once its task has ended (or cancel "
            f"its turn: DELETE /api/subagent-turns/{run.turn_id})"
        )
    repo, branch = run.turn.repo, run.branch
    if not _branch_exists(repo, branch):
        raise NotFound(f"branch {branch} is gone (discarded?): there is nothing to merge")
    target = base_branch(run)
    if not _branch_exists(repo, target):
        raise Conflict(f"branch {target}, which {branch} was made from, no longer exists")
    message = f"Merge {branch} (svc subagent {run.name})"
    with _merge_lock:
        committed = _commit_left_over(run, worktree)
        try:
            result = _merge_branch(repo, target, branch, message)
        except Conflict:
            _uncommit(worktree, committed)
            raise
    return {**result, "branch": branch, "committed": committed, "uncommitted": []}


def _commit_left_over(run: Subagent, worktree: str) -> list[str]:
    """Commit on the run's branch whatever its agent left uncommitted (untracked files too);
    returns the files (none: no commit)."""
    left = _uncommitted(worktree)
    if not left:
        return []
    _git(worktree, "add", "-A")
    said = f"svc: {run.name}'s uncommitted work (subagent turn {run.turn_id})"
    done = _run(worktree, "commit", "-q", "--no-verify", "-m", said, env=_identity(worktree))
    if done.returncode != 0:
        _run(worktree, "reset", "-q")
        raise Conflict(
            f"could not commit what {run.name} left uncommitted ({', '.join(left)}): "
            f"{(done.stderr or done.stdout).strip()}; commit it in {worktree}, then merge again"
        )
    return left


def _uncommit(worktree: str, committed: list[str]) -> None:
    """Undo _commit_left_over: the files are as the agent left them, uncommitted again."""
    if committed:
        _run(worktree, "reset", "-q", "HEAD~1")


def _merge_branch(repo: str, target: str, branch: str, message: str) -> dict[str, Any]:
    """Merge `branch` into `target` (under the merge lock); `merged` only once `target` holds
    the branch's tip."""
    before = _git(repo, "rev-parse", f"refs/heads/{target}").strip()
    tip = _git(repo, "rev-parse", f"refs/heads/{branch}").strip()
    if _run(repo, "merge-base", "--is-ancestor", tip, before).returncode == 0:
        fast_forward, after = False, before  # nothing new on the branch
    elif (tree := _checked_out_at(repo, target)) is not None:
        dirty = _git(tree, "status", "--porcelain", "--untracked-files=all").strip()
        if dirty:
            raise Conflict(
                f"{target} is checked out in {tree}, which has uncommitted or untracked "
                "changes: commit or stash them first, then merge again"
            )
        fast_forward = _merge_in(tree, branch, message)
        after = _git(repo, "rev-parse", f"refs/heads/{target}").strip()
    else:
        fast_forward, after = _merge_detached(repo, target, branch, before, tip, message)
    if _run(repo, "merge-base", "--is-ancestor", tip, after).returncode != 0:
        raise Conflict(f"{target} does not hold {branch} after the merge; nothing was merged")
    return {
        "merged": True,
        "base_branch": target,
        "base_commit": after,
        "previous_commit": before,
        "fast_forward": fast_forward,
        "up_to_date": after == before,
    }


def _merge_detached(
    repo: str, target: str, branch: str, before: str, tip: str, message: str
) -> tuple[bool, str]:
    """`target` is checked out nowhere: a fast-forward moves the ref; otherwise the merge is made
    in a throw-away detached work tree and the ref moves only if it succeeded (and only from
    the commit it was at)."""
    if _run(repo, "merge-base", "--is-ancestor", before, tip).returncode == 0:
        reason = f"svc: fast-forward to {branch}"
        _git(repo, "update-ref", "-m", reason, f"refs/heads/{target}", tip, before)
        return True, tip
    with tempfile.TemporaryDirectory(prefix="svc-merge-") as scratch:
        tree = str(Path(scratch) / "tree")
        _git(repo, "worktree", "add", "--detach", "-q", tree, before)
        try:
            _merge_in(tree, branch, message)
            after = _git(tree, "rev-parse", "HEAD").strip()
        finally:
            _run(repo, "worktree", "remove", "--force", tree)
            _run(repo, "worktree", "prune")
    _git(repo, "update-ref", "-m", f"svc: merge {branch}", f"refs/heads/{target}", after, before)
    return False, after


def _uncommitted(worktree: str) -> list[str]:
    """Files left uncommitted in the run's worktree (a merge takes commits only)."""
    if not Path(worktree).is_dir():
        return []
    status = ("status", "--porcelain", "-z", "--no-renames", "--untracked-files=all")
    out = _run(worktree, *status).stdout
    return [entry[3:] for entry in out.split("\0") if len(entry) > 3]


def discard(run: Subagent) -> None:
    """Remove the run's worktree and delete its branch."""
    worktree = _worktree_run(run)
    if run.status in RUNNING:
        raise Conflict(
            f"subagent {run.name!r} is {run.status}: cancel its turn first "
            f"(DELETE /api/subagent-turns/{run.turn_id})"
        )
    if not Path(worktree).exists() and not _branch_exists(run.turn.repo, run.branch):
        raise NotFound(f"subagent {run.name!r}: its worktree and branch are already gone")
    worktrees.remove(run.turn.repo, worktree, run.branch)
