"""Tunnels (contract §13): each declared tunnel is a supervised service forwarding a public
address to the remote listener — never to the main port."""
