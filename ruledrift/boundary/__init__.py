"""Where RuleDrift meets the operating system: files, HTTP, URLs, processes. Besides adapters/
and ollama/, the only layer that opens sockets or starts processes."""
