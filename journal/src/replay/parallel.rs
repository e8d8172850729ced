//! Spreading a journal's batches over threads, and merging their judgements back in the order
//! they were read.

use std::io::{self, Read};
use std::num::NonZeroUsize;

use super::batches::{Batch, BatchReader};
use super::judge::{Judge, Judgements};
use super::merge::Merge;
use super::ReplayEvent;
use crate::validate::Validator;

/// How replay spreads a journal over threads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parallelism {
    /// Threads judging lines (1: the reading thread judges them itself).
    pub workers: NonZeroUsize,
    /// Bytes read into a batch before it ends at its last whole line.
    pub batch_bytes: usize,
}

impl Parallelism {
    /// Enough that handing a batch over costs little per line (about 3,000 journal lines), few
    /// enough that the `2 x threads + 1` batches in flight stay a few MiB whatever the journal's
    /// size. A line longer than this grows its batch, up to [`MAX_LINE`](super::MAX_LINE).
    pub(super) const BATCH_BYTES: usize = 1 << 20;

    pub(super) fn new(threads: Option<NonZeroUsize>) -> Parallelism {
        let workers = threads
            .or_else(|| std::thread::available_parallelism().ok())
            .unwrap_or(NonZeroUsize::MIN)
            .min(NonZeroUsize::new(MAX_WORKERS).unwrap_or(NonZeroUsize::MIN));
        Parallelism {
            workers,
            batch_bytes: Self::BATCH_BYTES,
        }
    }
}

/// More threads than this only wait on the one reading the file.
pub const MAX_WORKERS: usize = 8;

/// Hands batches to `workers` threads and merges their judgements in the order the batches were
/// read. Whichever thread is free takes the next batch, so a thread that shares its core with the
/// reader, or runs on a slower one, takes fewer; the merge waits for each batch in turn. At most
/// two batches per thread are read and not yet merged, and their buffers come back to the
/// reader: memory stays flat.
pub(super) fn run_workers<R: Read>(
    judge: &Judge<'_>,
    workers: usize,
    batches: &mut BatchReader<'_, R>,
    merge: &mut Merge,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> io::Result<()> {
    use std::collections::BTreeMap;
    use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
    use std::sync::{mpsc, Arc, Mutex, PoisonError};
    std::thread::scope(|scope| {
        let (to_workers, queue) = mpsc::sync_channel::<(u64, Batch)>(workers);
        // Only the workers hold the queue: were they all gone, the reader's send would fail
        // instead of waiting for them.
        let queue = Arc::new(Mutex::new(queue));
        let (to_merge, judged) = mpsc::channel::<(u64, std::thread::Result<Judgements>)>();
        for _ in 0..workers {
            let (queue, to_merge) = (Arc::clone(&queue), to_merge.clone());
            scope.spawn(move || {
                let mut validator = Validator::new(judge.flow);
                loop {
                    // Held only while waiting for a batch, never while judging one.
                    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    let Ok((n, batch)) = next else {
                        break; // the reader is done
                    };
                    // A panic goes to the merge, which raises it again: the batch is not lost
                    // with the thread, to be waited for forever.
                    let result =
                        catch_unwind(AssertUnwindSafe(|| judge.batch(&mut validator, batch)));
                    let panicked = result.is_err();
                    if to_merge.send((n, result)).is_err() || panicked {
                        break;
                    }
                }
            });
        }
        drop((queue, to_merge));
        // Batches judged ahead of the one the merge waits for, by number.
        let mut ahead = BTreeMap::new();
        // For what a worker left of a batch of very short lines ([`MAX_JUDGED`]).
        let mut validator = Validator::new(judge.flow);
        let (mut sent, mut merged) = (0u64, 0u64);
        // Waits for one judged batch and merges every batch that is next in order; `false` once
        // no worker is left to answer (one died outside a batch: the scope raises its panic).
        let mut take = |merged: &mut u64, batches: &mut BatchReader<'_, R>| {
            let Ok((n, result)) = judged.recv() else {
                return false;
            };
            match result {
                Ok(j) => ahead.insert(n, j),
                Err(panic) => resume_unwind(panic),
            };
            while let Some(j) = ahead.remove(merged) {
                if let Some(buf) = merge_judged(judge, &mut validator, merge, j, on_event) {
                    batches.reuse(buf);
                }
                *merged += 1;
            }
            true
        };
        let limit = 2 * workers as u64;
        let read = 'read: loop {
            while sent - merged >= limit {
                if !take(&mut merged, batches) {
                    break 'read Ok(());
                }
            }
            let batch = match batches.next_batch() {
                Ok(Some(b)) => b,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            if to_workers.send((sent, batch)).is_err() {
                break Ok(()); // every worker is gone: the scope raises the panic that ended them
            }
            sent += 1;
        };
        // Closing the queue ends the workers once it is empty; what was read before an error is
        // reported before it, as a sequential read would.
        drop(to_workers);
        while merged < sent && take(&mut merged, batches) {}
        read
    })
}

/// Merges a judged batch, then judges and merges here whatever of it its judge left
/// ([`MAX_JUDGED`]), so that no judgement holds more lines than that; gives back the batch's
/// buffer.
pub(super) fn merge_judged(
    judge: &Judge<'_>,
    validator: &mut Validator<'_>,
    merge: &mut Merge,
    judged: Judgements,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Option<Vec<u8>> {
    let (lines, mut done) = merge.batch(judged, on_event)?;
    let bytes = lines.bytes();
    while done < bytes.len() {
        let (rest, used) = judge.lines(validator, &bytes[done..]);
        done += used;
        merge.batch(rest, on_event);
    }
    Some(lines.into_buffer())
}
