//! Links the `leopold` binary as a non-PIE executable.
//!
//! Why: `leopold persona guard` is started before every browser tool call, and its start-up is
//! most of its cost. A PIE of this size spends it in ld.so applying relative relocations, which
//! also dirties (page-faults in) every page they touch: `perf stat` measured 151 page faults and
//! 1.9 ms of CPU per guard call as a PIE, 85 and 1.1 ms without (BENCHMARKS.md, "The guard").
//! The price is that the executable's own code is not address-randomised (its libraries, heap and
//! stack still are); the crate forbids `unsafe`, so that hardening buys little here.
fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
