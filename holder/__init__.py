"""The holder: what keeps svc's hosted processes alive while svc is away (contract §17).

One small process per $SVC_HOME, stdlib only, in its own session and process group, so an svc
upgrade, crash, `kill -9` or service restart does not take the agents and terminals with it. It
owns each hosted process's PTY master or stdio pipes and journals what the process writes under
`<home>/holder/sessions/<id>/out`; svc attaches over a Unix socket only its user can reach,
showing a key only svc can read, and reads from any offset. Nothing here imports svc: a holder
started by one version of svc keeps serving the next (the protocol carries a version).

- protocol.py: the frames on the socket;
- paths.py: where the socket, the key, the lock and the journals live, and their modes;
- key.py: the key the first frame of every connection must carry;
- checks.py: what the holder checks of its peers and of every frame before it acts;
- server.py: the holder process (`python -m holder <dir>`): its socket, requests and stop;
- loop.py: its selector loop and timers;
- held.py: one held process (PTY or pipes), its journal and its stream;
- conn.py: one connection (control, or a session's stream);
- client.py: svc's asyncio side: start a holder if none runs, spawn, list, attach, forget.
- reach.py: svc's connections to it, each checked (folder, peer) before the key is sent.
- streams.py: svc's end of an attached session (frames, the stream, keys into a PTY).
- lease.py: both halves of the lease, under which svc reads an attached terminal's PTY itself,
  each read journaled before svc sees it.
"""
