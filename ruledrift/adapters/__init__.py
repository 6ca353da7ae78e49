"""The targets RuleDrift tests, behind one Protocol (`base.Adapter`) that raises only
`AdapterError`: the command adapter, Ollama's native API and OpenAI-compatible servers, and the
`ADAPTERS` registry. Sockets and processes are opened here and in the layers below that talk to
the outside (boundary/ for HTTP, files and processes; ollama/ for the Ollama server), never
above."""
