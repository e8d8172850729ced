//! Leopold persona guard: the PreToolUse hook's decision. See issue #2 and README "The guard".
//!
//! Contract: allow is exit 0 with no output; deny is exit 2 with one line on stderr. Nothing else.

/// Runs the hook: reads the payload from `stdin`, writes a deny reason to `stderr`, returns the
/// exit code (0 or 2, never anything else).
pub fn run(stdin: impl std::io::Read, stderr: impl std::io::Write) -> u8 {
    let _ = (stdin, stderr);
    2
}

/// The process entry point for `leopold persona guard`: real stdin and stderr, a panic hook that
/// denies. Returns the exit code.
pub fn main_entry() -> u8 {
    run(std::io::stdin().lock(), std::io::stderr().lock())
}
