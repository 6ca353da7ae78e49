"""The targets RuleDrift tests, behind one Protocol (`base.Adapter`) that raises only
`AdapterError`: the command adapter, Ollama's native API and OpenAI-compatible servers, and the
`ADAPTERS` registry. The adapters open no socket themselves: HTTP goes through boundary/ (and
ollama/ for Ollama's own API). The command adapter starts its agent as a child process, as do
boundary/processes.py, ollama/ (`ollama serve`) and checks/ (the regex and language workers); no
layer above this one opens a socket or starts a process."""
