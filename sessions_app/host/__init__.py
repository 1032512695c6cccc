"""The process host: owns every child process svc starts (PTY sessions, ACP agents, tunnels)."""
