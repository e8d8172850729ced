//! Harness wiring: Claude Code's `.claude/settings.json` and Codex's `config.toml`. See issue #3.
