"""Where RuleDrift meets the operating system: files, HTTP, URLs, processes.

The only layer besides adapters/ and ollama/ that opens sockets or starts processes."""
