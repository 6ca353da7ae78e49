"""What the tests share: fakes (loopback Ollama and OpenAI servers, an in-process recording
adapter), builders (suites, results), agents (scripts for the command adapter) and process
helpers. Test files import from here, never from each other."""

from pathlib import Path

AGENTS = Path(__file__).resolve().parent / "agents"  # command-adapter agents: scripts, not modules
CHECKS = Path(__file__).resolve().parent / "checks"  # `command` assertion programs: scripts too
MCP_SERVERS = Path(__file__).resolve().parent / "mcp_servers"  # MCP servers over stdio: scripts
