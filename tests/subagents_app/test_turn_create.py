"""`subagents.turn_create` (contract §4) in process: the argument checks and what they say, the git
worktrees it makes (from HEAD, only for a clean repository, one per subagent or one shared), and
the `starting` session every subagent gets before its agent runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import config
from core.errors import DomainError
from harness.git import git
from harness.runtime import settings_file
from harness.termclient import hosting_settings
from sessions_app.models import Session
from subagents_app import subagents, worktrees
from subagents_app.models import Subagent, SubagentTurn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fake_agent() -> Iterator[None]:
    """The fake agent, plus one declared but disabled; the worker's own file comes back."""
    settings = hosting_settings()
    settings["agents"]["off"] = {"acp_command": [sys.executable, "-c", "pass"], "enabled": False}
    with settings_file(settings):
        yield


def branches(repo: Path) -> list[str]:
    """svc's branches in `repo`."""
    return git(repo, "branch", "--list", "--format=%(refname:short)", "svc/*").split()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clean repository whose HEAD is a feature branch one commit ahead of main."""
    path = tmp_path / "repo"
    (path / "pkg").mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    (path / "pkg" / "mod.py").write_text("x = 1\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    git(path, "checkout", "-qb", "feature")
    (path / "feature.txt").write_text("only on the feature branch\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "feature")
    return path.resolve()


@pytest.fixture
def turns() -> Iterator[list[SubagentTurn]]:
    """Turns a test made: their worktrees and branches go at the end."""
    made: list[SubagentTurn] = []
    yield made
    for turn in made:
        subagents.turn_cleanup(turn_id=str(turn.id))


def one(name: str = "a", **fields: Any) -> dict[str, Any]:
    return {"name": name, "agent": "fake", "task": f"echo {name}", **fields}


def refused(**arguments: Any) -> str:
    arguments = {"mode": "parallel", "agents": [one()], **arguments}
    with pytest.raises(DomainError) as err:
        subagents.turn_create(**arguments)
    assert SubagentTurn.objects.count() == 0 and Session.objects.count() == 0  # nothing made
    return err.value.message


def test_mode_must_be_one_of_the_three(tmp_path: Path) -> None:
    message = refused(mode="solo", cwd=str(tmp_path))
    assert message == "mode must be one of parallel, collaboration, brainstorming, got 'solo'"


@pytest.mark.parametrize(
    ("agents", "expected"),
    [
        ([], "agents must list 1 to 8 subagents as "),
        ([one(f"n{i}") for i in range(9)], "got 9"),
        ("a", "got no list"),
        ([one(" ")], 'every subagent needs a non-blank "name" (e.g. "tests")'),
        ([one("no spaces")], "subagent name 'no spaces' must be letters, digits"),
        ([one("../up")], "it names a git branch and a folder"),
        ([one("x" * 65)], "at most 64 characters"),
        ([one("a"), one("a")], "subagent name 'a' is used twice; give each a different name"),
        ([one(agent="nope")], "agent 'nope' is unknown; use one of: "),
        ([one(agent="off")], "agent 'off' is not usable (not enabled or no ACP command)"),
        ([one(task="")], "subagent 'a' has no task: give it one, or pass a shared task"),
        ([one(task="   ")], "subagent 'a' has no task"),
    ],
)
def test_the_agents_are_checked_and_the_refusal_says_what_to_send(
    tmp_path: Path, agents: Any, expected: str
) -> None:
    message = refused(cwd=str(tmp_path), agents=agents)
    assert expected in message, message


def test_the_empty_list_names_the_shape_to_send(tmp_path: Path) -> None:
    message = refused(cwd=str(tmp_path), agents=[])
    assert '[{"name": "a", "agent": "claude", "task": "…"}], got 0' in message


def test_an_unknown_agent_lists_the_usable_ones(tmp_path: Path) -> None:
    message = refused(cwd=str(tmp_path), agents=[one(agent="nope")])
    usable = message.split("use one of: ", 1)[1].split(", ")
    assert "fake" in usable and "off" not in usable


@pytest.mark.parametrize("cwd", ["", "relative/dir", "/no/such/dir"])
def test_cwd_must_be_an_existing_absolute_directory(cwd: str) -> None:
    message = refused(cwd=cwd)
    assert message == f"cwd must be an existing directory (absolute path), got {cwd!r}"


def test_a_file_is_not_a_cwd(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    assert "cwd must be an existing directory" in refused(cwd=str(tmp_path / "f.txt"))


def test_a_shared_task_stands_in_for_a_missing_one(tmp_path: Path) -> None:
    turn = subagents.turn_create(
        mode="brainstorming", cwd=str(tmp_path), agents=[one(task="")], task="the shared task"
    )
    assert turn.task == "the shared task"
    assert turn.subagents.get().task == ""


def test_parallel_in_a_clean_repository_makes_one_worktree_per_subagent_from_head(
    repo: Path, turns: list[SubagentTurn]
) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    turn = subagents.turn_create(
        mode="parallel", cwd=str(repo), agents=[one("a"), one("b"), one("c")]
    )
    turns.append(turn)
    assert (turn.repo, turn.base_commit, turn.cwd) == (str(repo), head, str(repo))
    members = list(turn.subagents.all())
    assert [s.name for s in members] == ["a", "b", "c"]
    listed = git(repo, "worktree", "list", "--porcelain")
    for member in members:
        branch = f"svc/{turn.id}/{member.name}"
        assert member.branch == branch
        place = worktrees.root() / str(turn.id) / member.name
        assert member.workspace == str(place)
        assert place.is_relative_to(config.svc_home() / "worktrees")  # outside the repository
        assert f"worktree {place}" in listed and f"branch refs/heads/{branch}" in listed
        assert git(place, "rev-parse", "HEAD").strip() == head  # from HEAD, not main
        assert (place / "feature.txt").exists()
        assert git(place, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch
    assert len({s.workspace for s in members}) == 3
    assert git(repo, "status", "--porcelain") == ""  # the caller's checkout is untouched
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"


def test_a_cwd_inside_the_repository_is_the_same_folder_in_each_worktree(
    repo: Path, turns: list[SubagentTurn]
) -> None:
    turn = subagents.turn_create(mode="parallel", cwd=str(repo / "pkg"), agents=[one("a")])
    turns.append(turn)
    member = turn.subagents.get()
    assert turn.repo == str(repo)
    assert member.workspace == str(worktrees.root() / str(turn.id) / "a" / "pkg")
    assert (Path(member.workspace) / "mod.py").read_text() == "x = 1\n"


def test_collaboration_shares_one_worktree(repo: Path, turns: list[SubagentTurn]) -> None:
    turn = subagents.turn_create(
        mode="collaboration", cwd=str(repo), agents=[one("a"), one("b")], task="fix it"
    )
    turns.append(turn)
    shared = worktrees.root() / str(turn.id) / "shared"
    assert {(s.workspace, s.branch) for s in turn.subagents.all()} == {
        (str(shared), f"svc/{turn.id}/shared")
    }
    assert (shared / "feature.txt").exists()
    assert branches(repo) == [f"svc/{turn.id}/shared"]


def test_brainstorming_makes_no_worktree(repo: Path) -> None:
    turn = subagents.turn_create(mode="brainstorming", cwd=str(repo), agents=[one("a"), one("b")])
    assert (turn.repo, turn.base_commit) == ("", "")
    assert {(s.workspace, s.branch) for s in turn.subagents.all()} == {(str(repo), "")}
    assert not (worktrees.root() / str(turn.id)).exists()
    assert branches(repo) == []


@pytest.mark.parametrize("change", ["untracked", "modified", "staged"])
def test_a_dirty_repository_gets_no_worktrees(repo: Path, change: str) -> None:
    if change == "untracked":
        (repo / "new.txt").write_text("new\n")
    else:
        (repo / "README.md").write_text("changed\n")
        if change == "staged":
            git(repo, "add", "README.md")
    turn = subagents.turn_create(mode="parallel", cwd=str(repo), agents=[one("a"), one("b")])
    assert (turn.repo, turn.base_commit) == ("", "")
    assert {(s.workspace, s.branch) for s in turn.subagents.all()} == {(str(repo), "")}
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_folder_outside_git_gets_no_worktrees(tmp_path: Path) -> None:
    turn = subagents.turn_create(mode="parallel", cwd=str(tmp_path), agents=[one("a")])
    assert turn.repo == "" and turn.subagents.get().workspace == str(tmp_path.resolve())


def test_every_subagent_has_a_starting_session_named_in_the_snapshot(
    repo: Path, turns: list[SubagentTurn]
) -> None:
    turn = subagents.turn_create(
        mode="parallel", cwd=str(repo), agents=[one("a"), one("b", profile_id="p1")]
    )
    turns.append(turn)
    snapshot = subagents.turn_dict(turn)
    assert snapshot["status"] == "running" and snapshot["parent_session_id"] is None
    ids = [s["session_id"] for s in snapshot["subagents"]]
    assert all(ids) and len(set(ids)) == 2
    for entry, member in zip(snapshot["subagents"], turn.subagents.all(), strict=True):
        session = Session.objects.get(pk=entry["session_id"])
        assert (session.kind, session.status, session.pid) == ("subagent", "starting", None)
        assert (session.agent, session.workspace) == ("fake", member.workspace)
        assert session.title == f"subagent {member.name}"
        assert session.profile_id == member.profile_id
        assert entry["status"] == "pending"
        assert subagents.subagent_session(str(member.id)) == session
    assert Session.objects.count() == 2
    assert [s.profile_id for s in turn.subagents.all()] == ["", "p1"]


def test_the_parent_session_is_kept_when_it_exists(tmp_path: Path) -> None:
    parent = Session.objects.create(agent="fake", workspace=str(tmp_path), kind="chat")
    turn = subagents.turn_create(
        mode="brainstorming", cwd=str(tmp_path), agents=[one()], parent_session_id=str(parent.id)
    )
    assert subagents.turn_dict(turn)["parent_session_id"] == str(parent.id)
    assert subagents.turns_of_parent(str(parent.id)) == [str(turn.id)]
    unknown = "00000000-0000-4000-8000-000000000000"
    orphan = subagents.turn_create(
        mode="brainstorming", cwd=str(tmp_path), agents=[one()], parent_session_id=unknown
    )
    assert orphan.parent_session is None


def fail_second_add(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """`worktrees.add` makes the first worktree, then fails as git would; what it made."""
    real_add = worktrees.add
    made: list[Path] = []

    def add_then_fail(base: worktrees.Base, turn_id: str, name: str) -> Path:
        if made:
            raise worktrees.GitError("git worktree: no room")
        made.append(real_add(base, turn_id, name))
        return made[-1]

    monkeypatch.setattr(worktrees, "add", add_then_fail)
    return made


def test_a_git_failure_is_refused_and_drops_the_turn(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = fail_second_add(monkeypatch)
    message = refused(cwd=str(repo), agents=[one("a"), one("b")])
    assert message == "could not make the git worktrees: git worktree: no room"
    assert Subagent.objects.count() == 0
    assert not made[0].exists()


def test_a_git_failure_leaves_no_branch_or_worktree_entry(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_second_add(monkeypatch)
    refused(cwd=str(repo), agents=[one("a"), one("b")])
    assert "prunable" not in git(repo, "worktree", "list", "--porcelain")
    assert branches(repo) == []


def test_an_unknown_profile_is_refused_before_anything_is_made(repo: Path) -> None:
    try:
        message = refused(cwd=str(repo), agents=[one("a", profile_id="nope")])
        assert "unknown profile 'nope'" in message
        assert SubagentTurn.objects.count() == 0
        assert branches(repo) == []
    finally:
        for turn in SubagentTurn.objects.all():
            subagents.turn_cleanup(turn_id=str(turn.id))
