"""Content a model cannot take is dropped, and the client is told why."""

from __future__ import annotations

from bridge_app import ir, translate


def request() -> ir.Request:
    result = ir.ToolResult("call_1", [ir.Text("chart"), ir.Image("image/png", "AAAA")])
    return ir.Request(
        model="m",
        messages=[ir.Message("user", [ir.Text("see"), ir.Image("image/png", "BBBB"), result])],
        tools=[ir.Tool("f")],
        tool_choice="required",
    )


def test_images_are_dropped_everywhere_including_tool_results() -> None:
    req = request()
    warnings = translate.apply_capabilities(req, {"image_input": False})
    parts = req.messages[0].parts
    assert [type(p) for p in parts] == [ir.Text, ir.ToolResult]
    assert parts[1].content == [ir.Text("chart")]
    assert warnings == ["images dropped: the model does not take image input"]


def test_tools_are_dropped_with_their_choice() -> None:
    req = request()
    assert translate.apply_capabilities(req, {"tools": False}) == [
        "tools dropped: the model does not take tools"
    ]
    assert req.tools == [] and req.tool_choice is None


def test_nothing_is_dropped_or_said_when_capabilities_allow_it() -> None:
    req = request()
    assert translate.apply_capabilities(req, {"image_input": True}) == []
    assert len(req.messages[0].parts) == 3 and req.tools
