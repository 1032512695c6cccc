"""Diff review (contract §10, subagents_app/diffs.py) in process, on real repositories: a run's
files and counts are exactly `git diff --numstat` against its base (committed, uncommitted and
untracked); merge fast-forwards, else makes a merge commit, and a conflict leaves the base branch
and its work tree exactly as they were; discard removes the worktree and the branch; the API
shapes and refusals. Worktrees are made by `subagents.turn_create`; one run by the fake agent."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from core import config
from core.errors import Conflict, DomainError, NotFound
from harness.git import feature_repo, git
from harness.runtime import running, settings_file
from harness.termclient import hosting_settings
from sessions_app.models import Session
from subagents_app import diffs, subagents
from subagents_app.models import Subagent, SubagentTurn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fake_agent() -> Iterator[None]:
    with settings_file(hosting_settings()):
        yield


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clean repository on branch `feature` (one commit ahead of main)."""
    on_main = {"README.md": "hello\nworld\n", "gone.txt": "to be deleted\n"}
    return feature_repo(tmp_path / "repo", on_main)


@pytest.fixture
def turns() -> Iterator[list[SubagentTurn]]:
    made: list[SubagentTurn] = []
    yield made
    for turn in made:
        subagents.turn_cleanup(turn_id=str(turn.id))


@pytest.fixture
def run(repo: Path, turns: list[SubagentTurn]) -> Subagent:
    """One parallel subagent with its own worktree (made the real way; not started)."""
    turn = subagents.turn_create(
        mode="parallel", cwd=str(repo), agents=[{"name": "a", "agent": "fake", "task": "x"}]
    )
    turns.append(turn)
    member = turn.subagents.get()
    member.status = "done"
    member.save(update_fields=["status"])
    return Subagent.objects.select_related("turn").get(pk=member.pk)


def tree(run: Subagent) -> Path:
    return Path(subagents.worktree_of(run))


def commit(where: Path, name: str, text: str, message: str = "change") -> None:
    (where / name).write_text(text)
    git(where, "add", name)
    git(where, "commit", "-qm", message)


def rev(repo: Path, ref: str) -> str:
    return git(repo, "rev-parse", ref).strip()


def numstat(where: Path, base: str) -> list[tuple[str, str, str]]:
    """What `git diff --numstat` itself says, everything staged for real."""
    git(where, "add", "-A")
    out = git(where, "diff", "--cached", "--no-renames", "--numstat", base)
    return sorted(tuple(line.split("\t")) for line in out.splitlines())  # type: ignore[misc]


def counted(found: dict[str, Any]) -> list[tuple[str, str, str]]:
    def n(value: int | None) -> str:
        return "-" if value is None else str(value)

    return sorted((n(f["insertions"]), n(f["deletions"]), f["path"]) for f in found["files"])


# --- diffs ---------------------------------------------------------------------------------------


def test_files_and_counts_are_git_numstat_with_uncommitted_and_untracked(run: Subagent) -> None:
    wt = tree(run)
    commit(wt, "README.md", "hello\nthere\nworld\n")  # committed: +1
    git(wt, "rm", "-q", "gone.txt")
    git(wt, "commit", "-qm", "delete")  # committed deletion
    (wt / "feature.txt").write_text("changed\nand more\n")  # uncommitted: +2 -1
    (wt / "new dir").mkdir()
    (wt / "new dir" / "untracked file.txt").write_text("a\nb\nc\n")  # untracked: +3
    (wt / "blob.bin").write_bytes(bytes(range(256)) * 4)  # untracked binary
    status_before = git(wt, "status", "--porcelain")

    found = diffs.subagent_diff(run)

    assert git(wt, "status", "--porcelain") == status_before  # its own index untouched
    assert (found["base"], found["branch"]) == (run.turn.base_commit, run.branch)
    by_path = {f["path"]: f for f in found["files"]}
    assert {p: f["status"] for p, f in by_path.items()} == {
        "README.md": "M",
        "gone.txt": "D",
        "feature.txt": "M",
        "new dir/untracked file.txt": "A",
        "blob.bin": "A",
    }
    assert by_path["blob.bin"]["binary"] and by_path["blob.bin"]["insertions"] is None
    assert "Binary files /dev/null and b/blob.bin differ" in found["patch"]
    assert "+and more" in found["patch"] and "-to be deleted" in found["patch"]
    assert counted(found) == numstat(wt, run.turn.base_commit)


def test_session_diff_of_a_plain_repository_is_against_head(repo: Path) -> None:
    (repo / "README.md").write_text("hello\n")
    (repo / "extra.txt").write_text("x\n")
    session = Session.objects.create(agent="fake", workspace=str(repo / "."), kind="chat")
    found = diffs.session_diff(session)
    assert (found["base"], found["branch"]) == (rev(repo, "HEAD"), "feature")
    assert counted(found) == [("0", "1", "README.md"), ("1", "0", "extra.txt")]
    assert counted(found) == numstat(repo, "HEAD")


def test_a_subagents_session_diffs_its_worktree(run: Subagent) -> None:
    commit(tree(run), "mine.txt", "1\n2\n")
    found = diffs.session_diff(run.session)
    assert found["branch"] == run.branch and counted(found) == [("2", "0", "mine.txt")]


def test_a_workspace_outside_git_is_refused(tmp_path: Path) -> None:
    session = Session.objects.create(agent="fake", workspace=str(tmp_path), kind="chat")
    with pytest.raises(DomainError, match="not in a git repository"):
        diffs.session_diff(session)


# --- merge ---------------------------------------------------------------------------------------


def test_merge_fast_forwards_the_branch_it_was_made_from(repo: Path, run: Subagent) -> None:
    commit(tree(run), "work.txt", "done\n")
    tip = rev(repo, run.branch)
    result = diffs.merge(run)
    assert result["merged"] and result["fast_forward"] and result["base_branch"] == "feature"
    assert result["base_commit"] == tip == rev(repo, "feature")
    assert (repo / "work.txt").read_text() == "done\n"  # the checked-out work tree moved along
    assert git(repo, "status", "--porcelain") == ""
    assert rev(repo, "main") != tip  # never the default branch


def test_merge_makes_a_merge_commit_when_the_base_moved_on(repo: Path, run: Subagent) -> None:
    commit(tree(run), "work.txt", "done\n")
    commit(repo, "other.txt", "meanwhile\n")
    before = rev(repo, "feature")
    result = diffs.merge(run)
    assert result["merged"] and not result["fast_forward"]
    assert result["previous_commit"] == before and result["base_commit"] == rev(repo, "feature")
    parents = git(repo, "rev-list", "--parents", "-n1", "feature").split()[1:]
    assert parents == [before, rev(repo, run.branch)]
    assert (repo / "work.txt").exists() and git(repo, "status", "--porcelain") == ""


def test_a_conflict_is_reported_and_changes_nothing(repo: Path, run: Subagent) -> None:
    commit(tree(run), "README.md", "theirs\n")
    commit(repo, "README.md", "ours\n")
    before, status = rev(repo, "feature"), git(repo, "status", "--porcelain", "--ignored")
    with pytest.raises(diffs.MergeConflict) as err:
        diffs.merge(run)
    assert err.value.files == ["README.md"] and err.value.status == 409
    assert rev(repo, "feature") == before
    assert git(repo, "status", "--porcelain", "--ignored") == status
    assert (repo / "README.md").read_text() == "ours\n"
    assert not (repo / ".git" / "MERGE_HEAD").exists()


def test_uncommitted_work_is_committed_on_the_branch_and_merged(repo: Path, run: Subagent) -> None:
    """What agents do: edit files and never commit (issue 33). Merge brings that work in."""
    (tree(run) / "README.md").write_text("hello\nworld\nand more\n")
    (tree(run) / "notes.txt").write_text("new, untracked\n")
    result = diffs.merge(run)
    assert result["merged"] and not result["up_to_date"]
    assert result["committed"] == ["README.md", "notes.txt"] and result["uncommitted"] == []
    assert git(repo, "show", "feature:README.md") == "hello\nworld\nand more\n"
    assert git(repo, "show", "feature:notes.txt") == "new, untracked\n"
    assert (repo / "notes.txt").read_text() == "new, untracked\n"  # the checkout moved along
    said = git(repo, "log", "-1", "--format=%s", run.branch)
    assert run.name in said and str(run.turn_id) in said
    assert git(tree(run), "status", "--porcelain") == ""


def test_conflicting_uncommitted_work_changes_nothing_anywhere(repo: Path, run: Subagent) -> None:
    (tree(run) / "README.md").write_text("theirs, never committed\n")
    commit(repo, "README.md", "ours\n")
    before, status = rev(repo, "feature"), git(repo, "status", "--porcelain", "--ignored")
    branch_before = rev(repo, run.branch)
    with pytest.raises(diffs.MergeConflict) as err:
        diffs.merge(run)
    assert err.value.files == ["README.md"] and err.value.status == 409
    assert rev(repo, "feature") == before and (repo / "README.md").read_text() == "ours\n"
    assert git(repo, "status", "--porcelain", "--ignored") == status
    # The subagent's worktree is as its agent left it: the change there, uncommitted.
    assert rev(repo, run.branch) == branch_before
    assert (tree(run) / "README.md").read_text() == "theirs, never committed\n"
    assert git(tree(run), "status", "--porcelain").strip() == "M README.md"


def test_a_running_subagent_is_not_merged(repo: Path, run: Subagent) -> None:
    (tree(run) / "README.md").write_text("half done\n")
    run.status = "running"
    run.save(update_fields=["status"])
    with pytest.raises(Conflict, match="merge once its task has ended"):
        diffs.merge(run)
    assert git(tree(run), "status", "--porcelain").strip() == "M README.md"


def test_a_dirty_checked_out_base_is_refused(repo: Path, run: Subagent) -> None:
    commit(tree(run), "work.txt", "done\n")
    (repo / "scratch.txt").write_text("mine, not committed\n")
    before = rev(repo, "feature")
    with pytest.raises(Conflict, match="uncommitted or untracked"):
        diffs.merge(run)
    assert rev(repo, "feature") == before and not (repo / "work.txt").exists()


def test_a_base_checked_out_nowhere_is_merged_without_a_work_tree(
    repo: Path, run: Subagent
) -> None:
    commit(tree(run), "work.txt", "done\n")
    commit(repo, "other.txt", "meanwhile\n")
    git(repo, "checkout", "-q", "main")  # feature is now checked out nowhere
    worktrees_before = git(repo, "worktree", "list")
    before = rev(repo, "feature")
    result = diffs.merge(run)
    assert not result["fast_forward"] and rev(repo, "feature") == result["base_commit"] != before
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(repo, "status", "--porcelain") == "" and not (repo / "work.txt").exists()
    assert git(repo, "worktree", "list") == worktrees_before  # the scratch tree is gone
    assert git(repo, "show", "feature:work.txt") == "done\n"


def test_a_conflict_on_a_base_checked_out_nowhere_moves_nothing(repo: Path, run: Subagent) -> None:
    commit(tree(run), "README.md", "theirs\n")
    commit(repo, "README.md", "ours\n")
    git(repo, "checkout", "-q", "main")
    before, worktrees_before = rev(repo, "feature"), git(repo, "worktree", "list")
    with pytest.raises(diffs.MergeConflict) as err:
        diffs.merge(run)
    assert err.value.files == ["README.md"] and rev(repo, "feature") == before
    assert git(repo, "worktree", "list") == worktrees_before


def test_discard_removes_the_worktree_and_the_branch(repo: Path, run: Subagent) -> None:
    wt = tree(run)
    commit(wt, "work.txt", "done\n")
    recorded = f"branch.{run.branch}.svc-base"  # where a merge goes, kept in git by worktrees.add
    assert git(repo, "config", "--get", recorded).strip() == "feature"
    diffs.discard(run)
    left = subprocess.run(
        ["git", "config", "--get-regexp", "svc-base"], cwd=repo, capture_output=True
    )
    assert left.returncode == 1 and left.stdout == b""  # forgotten with the branch
    assert not wt.exists()
    assert git(repo, "branch", "--list", run.branch) == ""
    assert str(wt) not in git(repo, "worktree", "list")
    with pytest.raises(NotFound):
        diffs.subagent_diff(run)
    with pytest.raises(NotFound):
        diffs.discard(run)


# --- API -----------------------------------------------------------------------------------------


@pytest.fixture
def api() -> Client:
    return Client(headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})


def test_api_subagent_diff_merge_discard(api: Client, repo: Path, run: Subagent) -> None:
    commit(tree(run), "work.txt", "one\ntwo\n")
    answer = api.get(f"/api/subagents/{str(run.id)[:8]}/diff")  # a unique prefix will do
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert set(body) >= {"base", "branch", "files", "patch"}
    assert body["files"] == [
        {"path": "work.txt", "status": "A", "binary": False, "insertions": 2, "deletions": 0}
    ]
    merged = api.post(f"/api/subagents/{run.id}/merge")
    assert merged.status_code == 200, merged.content
    assert merged.json()["merged"] is True and merged.json()["fast_forward"] is True
    assert merged.json()["base_commit"] == rev(repo, "feature")
    assert api.post(f"/api/subagents/{run.id}/discard").status_code == 204
    assert api.get(f"/api/subagents/{run.id}/diff").status_code == 404


def test_api_conflict_names_the_files(api: Client, repo: Path, run: Subagent) -> None:
    commit(tree(run), "README.md", "theirs\n")
    commit(repo, "README.md", "ours\n")
    answer = api.post(f"/api/subagents/{run.id}/merge")
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "conflict" and error["files"] == ["README.md"]
    assert "README.md" in error["message"]


def test_api_session_diff_and_refusals(api: Client, repo: Path, tmp_path: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    in_git = Session.objects.create(agent="fake", workspace=str(repo), kind="chat")
    answer = api.get(f"/api/sessions/{in_git.id}/diff")
    assert answer.status_code == 200 and answer.json()["files"][0]["path"] == "README.md"
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = Session.objects.create(agent="fake", workspace=str(plain), kind="chat")
    refused = api.get(f"/api/sessions/{outside.id}/diff")
    assert refused.status_code == 400 and "not in a git repository" in refused.content.decode()
    assert api.get("/api/sessions/nope/diff").status_code == 404
    assert api.get("/api/subagents/0123abcd/diff").status_code == 404
    assert api.post("/api/subagents/nope/merge").status_code == 404
    assert Client().get(f"/api/sessions/{in_git.id}/diff").status_code == 401


def test_api_refuses_runs_without_a_worktree(
    api: Client, tmp_path: Path, turns: list[SubagentTurn]
) -> None:
    turn = subagents.turn_create(
        mode="brainstorming",
        cwd=str(tmp_path),
        agents=[{"name": "b", "agent": "fake", "task": "x"}],
    )
    turns.append(turn)
    member = turn.subagents.get()
    for answer in (
        api.get(f"/api/subagents/{member.id}/diff"),
        api.post(f"/api/subagents/{member.id}/merge"),
        api.post(f"/api/subagents/{member.id}/discard"),
    ):
        assert answer.status_code == 400 and "without a git worktree" in answer.content.decode()


def test_api_discard_refuses_a_running_subagent(api: Client, run: Subagent) -> None:
    Subagent.objects.filter(pk=run.pk).update(status="running")
    answer = api.post(f"/api/subagents/{run.id}/discard")
    assert answer.status_code == 409 and "cancel its turn" in answer.content.decode()
    assert tree(run).exists()


# --- a real run ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_fake_agents_commit_is_diffed_and_merged(
    repo: Path, turns: list[SubagentTurn]
) -> None:
    async with running() as rt:
        turn = await sync_to_async(subagents.turn_create)(
            mode="parallel",
            cwd=str(repo),
            agents=[{"name": "w", "agent": "fake", "task": "commit made.txt 3"}],
        )
        turns.append(turn)
        rt.subagents.start(str(turn.id))

        async def quiet(snapshot: dict[str, Any]) -> None:
            return None

        done = await rt.subagents.wait(str(turn.id), 30, quiet)
    assert done["completed"] and done["subagents"][0]["status"] == "done", done
    member = await sync_to_async(Subagent.objects.select_related("turn").get)(turn=turn)
    found = await sync_to_async(diffs.subagent_diff)(member)
    assert found["files"] == [
        {"path": "made.txt", "status": "A", "binary": False, "insertions": 3, "deletions": 0}
    ]
    result = await sync_to_async(diffs.merge)(member)
    assert result["fast_forward"] and (repo / "made.txt").read_text().count("\n") == 3
