//! `--partition count:M/N` and `hash:M/N`: which share of a suite's flow × harness list this
//! job runs, in nextest's syntax, so that N CI jobs (a GitHub matrix, a Kubernetes Indexed Job)
//! together run every pair exactly once.
//!
//! - `count:M/N` takes every N-th pair of the list, starting at the M-th: shards differ by at
//!   most one run, but adding a flow moves later pairs to other shards.
//! - `hash:M/N` takes the pairs whose key (`<flow name>/<harness>`) hashes to M: a pair stays on
//!   its shard whatever else is added, but shards can be uneven.
//!
//! Both depend only on the list and the keys, never on the machine, so every job of a matrix
//! computes the same split. The hash is SHA-256 (already the journal's), not the std hasher,
//! whose output may change between Rust releases.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// One shard of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub kind: Kind,
    /// 1-based.
    pub shard: u32,
    pub total: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Count,
    Hash,
}

impl Partition {
    /// Whether the pair at `index` (0-based, in the suite's order) with `key` is this shard's.
    pub fn keeps(&self, index: usize, key: &str) -> bool {
        let bucket = match self.kind {
            Kind::Count => (index as u64) % u64::from(self.total),
            Kind::Hash => {
                let digest = Sha256::digest(key.as_bytes());
                let mut first = [0u8; 8];
                first.copy_from_slice(&digest[..8]);
                u64::from_be_bytes(first) % u64::from(self.total)
            }
        };
        bucket + 1 == u64::from(self.shard)
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Count => "count",
            Kind::Hash => "hash",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.total)
    }
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Partition, String> {
        let hint = "expected `count:M/N` or `hash:M/N`, with 1 <= M <= N (e.g. `count:1/2`)";
        let (kind, rest) = s.split_once(':').ok_or_else(|| format!("`{s}`: {hint}"))?;
        let kind = match kind {
            "count" => Kind::Count,
            "hash" => Kind::Hash,
            other => return Err(format!("unknown partition kind `{other}`: {hint}")),
        };
        let (m, n) = rest
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: {hint}"))?;
        let number = |v: &str| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{v}` in `{s}` is not a whole number: {hint}"))
        };
        let (shard, total) = (number(m)?, number(n)?);
        if total == 0 || shard == 0 || shard > total {
            return Err(format!("`{s}`: {hint}"));
        }
        Ok(Partition { kind, shard, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("flow-{i}/{}", ["claude", "codex"][i % 2]))
            .collect()
    }

    #[test]
    fn shards_cover_the_list_exactly_once() {
        for kind in ["count", "hash"] {
            for total in 1..=5u32 {
                let list = keys(13);
                let mut seen = vec![0u32; list.len()];
                for shard in 1..=total {
                    let p: Partition = format!("{kind}:{shard}/{total}").parse().unwrap();
                    for (i, k) in list.iter().enumerate() {
                        if p.keeps(i, k) {
                            seen[i] += 1;
                        }
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{kind} /{total}: {seen:?}");
            }
        }
    }

    #[test]
    fn count_shards_are_even_and_hash_shards_follow_the_key() {
        let list = keys(8);
        let p: Partition = "count:2/3".parse().unwrap();
        let mine: Vec<usize> = (0..8).filter(|&i| p.keeps(i, &list[i])).collect();
        assert_eq!(mine, [1, 4, 7]);
        // A pair's hash shard does not depend on its place in the list.
        let h: Partition = "hash:1/2".parse().unwrap();
        assert_eq!(h.keeps(0, "checkout/codex"), h.keeps(41, "checkout/codex"));
        assert_eq!(h.to_string(), "hash:1/2");
    }

    #[test]
    fn bad_partitions_say_what_is_expected() {
        for bad in [
            "",
            "count",
            "count:0/2",
            "count:3/2",
            "count:1/0",
            "slice:1/2",
            "hash:a/2",
        ] {
            let err = bad.parse::<Partition>().unwrap_err();
            assert!(err.contains("count:M/N"), "{bad}: {err}");
        }
    }
}
