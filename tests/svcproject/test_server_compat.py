"""The server hooks' start-up self-tests fail when the hook they prove is broken."""

from __future__ import annotations

from core import server_compat


def test_terminal_backpressure_is_proven_on_twisteds_own_transport() -> None:
    assert server_compat.backpressure_self_test() is None


def test_a_broken_backpressure_hook_fails_the_start_up_check() -> None:
    def unhooked(send: object) -> server_compat.SocketFlow:
        return server_compat.SocketFlow()  # a flow the transport never pauses

    problem = server_compat.backpressure_self_test(flow_for=unhooked)
    assert problem is not None and "no backpressure" in problem


def test_outside_daphne_a_flow_is_always_writable() -> None:
    flow = server_compat.socket_flow(lambda message: None)
    assert flow.writable.is_set()
    assert not server_compat.send_empty_binary_frame(lambda message: None)


def test_taking_over_a_connection_keeps_it_reading() -> None:
    """The HTTP channel that handed the connection over may have paused its reading; the flow
    that replaces it as producer must switch reading back on, or keys typed during a flood are
    never read."""
    import functools

    calls: list[str] = []

    class Transport:
        producer: object = object()  # the HTTP channel, still registered
        bufferSize = 65536

        def unregisterProducer(self) -> None:
            calls.append("unregister")
            self.producer = None

        def resumeProducing(self) -> None:
            calls.append("resume reading")

        def registerProducer(self, producer: object, streaming: bool) -> None:
            calls.append("register flow")
            self.producer = producer

    class Protocol:
        transport = Transport()

    flow = server_compat.socket_flow(functools.partial(print, Protocol()))
    assert calls == ["unregister", "resume reading", "register flow"]
    assert Protocol.transport.producer is flow
