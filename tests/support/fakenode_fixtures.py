"""pytest fixtures that build fake GPU nodes (see fakenode.py)."""
