//! Links the `leopold` binary as a non-PIE executable.
//!
//! Why: `leopold persona guard` is started before every browser tool call, and its start-up is
//! most of its cost. A PIE of this size spends it applying relative relocations, which also
//! dirties (page-faults in) every page they touch: `perf stat` measured 151 page faults and
//! 1.9 ms of CPU per guard call as a PIE, 85 and 1.1 ms without (BENCHMARKS.md, "The guard").
//! A normal build goes further and links statically (`.cargo/rustc-leopold.sh`, which already
//! asks rustc for a non-PIE static link); this keeps the gain where that is switched off or not
//! possible. The price is that the executable's own code is not address-randomised (its heap
//! and stack still are); the crate denies `unsafe` outside its one audited process-control
//! module, so that hardening buys little here.
fn main() {
    // The static link's off switch is read by `.cargo/rustc-leopold.sh`, which cargo does not
    // track: declaring it here makes a change of it rebuild (and relink) this package.
    println!("cargo:rerun-if-env-changed=LEOPOLD_DYNAMIC_LINK");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
