//! Work shared between threads: how many cores there are, and jobs each thread takes in turn.
//!
//! Results never depend on the thread count: each job is done whole by one thread, and results
//! come back in job order.

use std::collections::VecDeque;
use std::num::NonZero;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

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

/// Runs the jobs `take` hands out, in turn as [`in_turn`] does, and hands their results to
/// `deliver` on the calling thread in the order they were taken, each as soon as it and those
/// before it are done. `take` is called under a lock, one job at a time; no job is taken while
/// `ahead` results wait to be delivered, which bounds the memory they hold. The calling thread
/// runs jobs too, between deliveries. The first error of `deliver` stops the work and is
/// returned; one thread runs and delivers the jobs in order, here.
///
/// # Panics
/// Only if a job panicked.
pub(crate) fn in_order<J: Send, T: Send, E>(
    threads: usize,
    ahead: usize,
    mut take: impl FnMut() -> Option<J> + Send,
    run: impl Fn(J) -> T + Sync,
    mut deliver: impl FnMut(T) -> Result<(), E>,
) -> Result<(), E> {
    if threads <= 1 {
        while let Some(job) = take() {
            deliver(run(job))?;
        }
        return Ok(());
    }
    let queue = Mutex::new(Queue {
        take,
        ahead: ahead.max(1),
        delivered: 0,
        waiting: VecDeque::new(),
        open: true,
        failed: false,
    });
    let changed = Condvar::new();
    let lock = || queue.lock().expect("jobs are run outside the lock");
    // Runs a job and files its result, waking whoever waits for it. A job that panics closes
    // the queue on its way out, so that no thread waits for its result.
    let work = |at: usize, job: J| {
        let closer = Closer(|| {
            if let Ok(mut queue) = queue.lock() {
                queue.open = false;
                queue.failed = true;
            }
            changed.notify_all();
        });
        let result = run(job);
        std::mem::forget(closer);
        let mut queue = lock();
        let slot = at - queue.delivered;
        queue.waiting[slot] = Some(result);
        changed.notify_all();
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| {
                let mut queue = lock();
                loop {
                    if let Some((at, job)) = queue.claim() {
                        drop(queue);
                        work(at, job);
                        queue = lock();
                    } else if queue.open {
                        queue = changed.wait(queue).expect("a job does not panic");
                    } else {
                        // Whoever closed the queue may not have woken the others.
                        changed.notify_all();
                        return;
                    }
                }
            });
        }
        let mut queue = lock();
        loop {
            if queue.failed {
                // The scope's end re-raises the job's panic.
                return Ok(());
            }
            if queue.waiting.front().is_some_and(Option::is_some) {
                let result = queue.waiting.pop_front().flatten();
                queue.delivered += 1;
                changed.notify_all();
                drop(queue);
                let delivered = result.map_or(Ok(()), &mut deliver);
                queue = lock();
                if delivered.is_err() {
                    queue.open = false;
                    changed.notify_all();
                    return delivered;
                }
            } else if let Some((at, job)) = queue.claim() {
                drop(queue);
                work(at, job);
                queue = lock();
            } else if queue.open || !queue.waiting.is_empty() {
                queue = changed.wait(queue).expect("a job does not panic");
            } else {
                changed.notify_all();
                return Ok(());
            }
        }
    })
}

/// The shared state of [`in_order`]: where jobs come from and the results not delivered yet.
struct Queue<F, T> {
    take: F,
    ahead: usize,
    /// Results delivered so far: the job number of `waiting[0]`.
    delivered: usize,
    /// One slot per job taken and not delivered, in job order: its result once done.
    waiting: VecDeque<Option<T>>,
    /// Whether more jobs may be taken: `take` has not run out, and no delivery failed.
    open: bool,
    /// Whether a job panicked.
    failed: bool,
}

/// Runs its closure when dropped: on the way out of a panic, unless forgotten before.
struct Closer<F: FnMut()>(F);

impl<F: FnMut()> Drop for Closer<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

impl<J, T, F: FnMut() -> Option<J>> Queue<F, T> {
    /// The next job and its number, unless there are none or `ahead` results wait.
    fn claim(&mut self) -> Option<(usize, J)> {
        if !self.open || self.waiting.len() >= self.ahead {
            return None;
        }
        let Some(job) = (self.take)() else {
            self.open = false;
            return None;
        };
        self.waiting.push_back(None);
        Some((self.delivered + self.waiting.len() - 1, job))
    }
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
    fn results_are_delivered_in_the_order_jobs_were_taken() {
        for threads in [1, 2, 3, 8] {
            for ahead in [1, 2, 5, 100] {
                let mut next = 0_u64;
                let mut delivered = Vec::new();
                let done: Result<(), ()> = in_order(
                    threads,
                    ahead,
                    || {
                        next += 1;
                        (next <= 200).then_some(next - 1)
                    },
                    |job| {
                        // Uneven jobs, so that later ones often finish first.
                        std::thread::sleep(std::time::Duration::from_micros(job % 7 * 20));
                        job * 3
                    },
                    |result| {
                        delivered.push(result);
                        Ok(())
                    },
                );
                assert!(done.is_ok());
                assert_eq!(delivered, (0..200).map(|i| i * 3).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_failed_delivery_stops_the_work_and_is_the_result() {
        for threads in [1, 2, 4] {
            let taken = AtomicUsize::new(0);
            let mut delivered = 0;
            let done = in_order(
                threads,
                4,
                || (taken.fetch_add(1, Ordering::Relaxed) < 1000).then_some(()),
                |()| (),
                |()| {
                    delivered += 1;
                    if delivered == 10 {
                        Err(delivered)
                    } else {
                        Ok(())
                    }
                },
            );
            assert_eq!(done, Err(10));
            // No more than `ahead` jobs beyond the failed delivery were taken.
            assert!(taken.load(Ordering::Relaxed) <= 10 + 4 + 1, "{taken:?}");
        }
    }

    #[test]
    fn a_panicking_job_is_raised_not_waited_for() {
        for threads in [2, 3] {
            let mut next = 0;
            let raised = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                in_order(
                    threads,
                    4,
                    || {
                        next += 1;
                        (next <= 50).then_some(next - 1)
                    },
                    |job| assert_ne!(job, 20, "job 20 fails"),
                    |()| Ok::<(), ()>(()),
                )
            }));
            assert!(raised.is_err());
        }
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
