"""Code that runs inside kernels (sent as text at start; never imported by the host)."""
