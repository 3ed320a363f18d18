//! Work shared between threads: how many cores there are, and jobs each thread takes in turn.
//!
//! Results never depend on the thread count: each job is done whole by one thread, and results
//! come back in job order.

use std::num::NonZero;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The cores this process may use (1 when the system cannot say).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, NonZero::get)
}

/// Runs `job(0)`, …, `job(jobs - 1)` on `threads` threads, the calling one among them, each
/// taking the next job not taken yet (so a thread slowed by other work leaves its share to the
/// others), and returns the results in job order. One thread runs them in order, here.
///
/// # Panics
/// Only if a job panicked.
pub(crate) fn in_turn<T: Send>(
    jobs: usize,
    threads: usize,
    job: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    if threads <= 1 || jobs <= 1 {
        return (0..jobs).map(job).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            if at >= jobs {
                return done;
            }
            done.push((at, job(at)));
        }
    };
    let mut done = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads.min(jobs)).map(|_| scope.spawn(work)).collect();
        let mut done = work();
        for other in others {
            done.extend(other.join().expect("a job does not panic"));
        }
        done
    });
    done.sort_unstable_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_job_order_whatever_the_threads() {
        let squares: Vec<usize> = (0..100).map(|i| i * i).collect();
        for threads in [1, 2, 3, 8] {
            assert_eq!(in_turn(100, threads, |i| i * i), squares);
        }
        assert!(in_turn(0, 2, |i| i).is_empty());
    }
}
