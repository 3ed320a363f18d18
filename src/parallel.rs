//! Work shared between threads: how many cores there are, and jobs each thread takes in turn.
//!
//! Results never depend on the thread count: each job is done whole by one thread, and results
//! come back in job order.

use std::num::NonZero;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The cores this process may use (1 when the system cannot say), asked once: the system's
/// answer takes reading files (a cgroup's quota), tens of microseconds a call.
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZero::get))
}

/// Runs `side` on a thread of its own while the calling thread runs `main`, when `apart` (the
/// work repays starting a thread), else one after the other; returns both results.
///
/// # Panics
/// Only if `side` panicked.
pub(crate) fn beside<A: Send, B>(
    apart: bool,
    side: impl FnOnce() -> A + Send,
    main: impl FnOnce() -> B,
) -> (A, B) {
    if !apart {
        return (side(), main());
    }
    std::thread::scope(|scope| {
        let side = scope.spawn(side);
        let main = main();
        (side.join().expect("the side job does not panic"), main)
    })
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
    // Results that weigh nothing never weigh enough: every job runs.
    prefix_in_turn(jobs, threads, usize::MAX, |_| 0, job)
}

/// Runs jobs in turn as [`in_turn`] does, but hands out no more once the results done weigh
/// `enough` together (by `weight`): returns the results of the jobs that ran, which are always
/// jobs `0..k` in job order, weighing `enough` or more unless all of them ran. Each thread
/// finishes the job it holds, so `k` may pass the first prefix that weighs enough by a few
/// jobs (the caller reads the results in order and stops where it needs). One thread runs them
/// in order, here, and stops at that first prefix.
///
/// # Panics
/// Only if a job panicked.
pub(crate) fn prefix_in_turn<T: Send>(
    jobs: usize,
    threads: usize,
    enough: usize,
    weight: impl Fn(&T) -> usize + Sync,
    job: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let weighed = AtomicUsize::new(0);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while weighed.load(Ordering::Acquire) < enough {
            let at = next.fetch_add(1, Ordering::Relaxed);
            if at >= jobs {
                break;
            }
            let result = job(at);
            weighed.fetch_add(weight(&result), Ordering::Release);
            done.push((at, result));
        }
        done
    };
    if threads <= 1 || jobs <= 1 {
        return work().into_iter().map(|(_, result)| result).collect();
    }
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

    #[test]
    fn a_prefix_runs_until_its_results_weigh_enough() {
        // Jobs weigh their index: 0 + 1 + … + 9 = 45 is the first prefix weighing 45.
        let one = prefix_in_turn(100, 1, 45, |w| *w, |i| i);
        assert_eq!(one, (0..10).collect::<Vec<_>>());
        for threads in [2, 3, 8] {
            let done = prefix_in_turn(100, threads, 45, |w| *w, |i| i);
            assert!(done.len() >= 10, "{}", done.len());
            assert_eq!(done, (0..done.len()).collect::<Vec<_>>());
        }
        // Never enough: every job runs.
        assert_eq!(
            prefix_in_turn(5, 2, usize::MAX, |w| *w, |i| i),
            vec![0, 1, 2, 3, 4]
        );
        assert!(prefix_in_turn(0, 2, 1, |w| *w, |i| i).is_empty());
        assert!(prefix_in_turn(5, 2, 0, |w| *w, |i| i).is_empty());
    }
}
