//! Calls into one session run one at a time, in the order they arrived.
//!
//! rmcp handles each request in its own task, and tokio may start those tasks
//! in any order (a freshly spawned task can overtake an earlier one), so a
//! plain mutex would serialize the calls but could run `cd src` after the
//! `ls` sent behind it. The stdin gate therefore records each `tools/call`
//! id as its line is read, and a call waits until every call that arrived
//! before it has finished.
//!
//! A recorded request whose handler never runs (rmcp rejected it after the
//! gate let it through) would block the queue forever; such an entry is
//! dropped once it has waited [`UNCLAIMED`] without being claimed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How long a recorded call may go unclaimed before it stops blocking others.
const UNCLAIMED: Duration = Duration::from_secs(2);

struct Entry {
    key: String,
    recorded: Instant,
    claimed: bool,
}

/// The arrival-ordered queue of one session.
#[derive(Clone)]
pub struct ArrivalOrder {
    queue: Arc<Mutex<VecDeque<Entry>>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for ArrivalOrder {
    fn default() -> Self {
        Self {
            queue: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
        }
    }
}

impl ArrivalOrder {
    /// Records a call as it arrives (called by the stdin gate, in order).
    pub fn record(&self, key: String) {
        self.lock().push_back(Entry {
            key,
            recorded: Instant::now(),
            claimed: false,
        });
    }

    /// Waits for this call's turn; the turn ends when the guard is dropped.
    pub async fn turn(&self, key: &str) -> Turn {
        let mut changed = self.changed.subscribe();
        {
            let mut queue = self.lock();
            if let Some(entry) = queue.iter_mut().find(|entry| entry.key == key) {
                entry.claimed = true;
            } else {
                // Not seen by the gate (a client reusing an id): it queues
                // behind everything that is already there.
                queue.push_back(Entry {
                    key: key.to_owned(),
                    recorded: Instant::now(),
                    claimed: true,
                });
            }
        }
        loop {
            let wait = {
                let mut queue = self.lock();
                while queue
                    .front()
                    .is_some_and(|entry| !entry.claimed && entry.recorded.elapsed() >= UNCLAIMED)
                {
                    queue.pop_front();
                }
                match queue.front() {
                    Some(front) if front.key == key => {
                        return Turn {
                            order: self.clone(),
                            key: key.to_owned(),
                        };
                    }
                    Some(front) if !front.claimed => UNCLAIMED
                        .saturating_sub(front.recorded.elapsed())
                        .max(Duration::from_millis(10)),
                    _ => UNCLAIMED,
                }
            };
            let _ = tokio::time::timeout(wait, changed.changed()).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call's turn in the session; dropping it lets the next call run.
pub struct Turn {
    order: ArrivalOrder,
    key: String,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut queue = self.order.lock();
        if let Some(position) = queue.iter().position(|entry| entry.key == self.key) {
            queue.remove(position);
        }
        drop(queue);
        self.order
            .changed
            .send_modify(|generation| *generation += 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_calls_in_arrival_order_whoever_asks_first() {
        let order = ArrivalOrder::default();
        order.record("1".into());
        order.record("2".into());
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let second = {
            let order = order.clone();
            let sender = sender.clone();
            tokio::spawn(async move {
                let _turn = order.turn("2").await;
                sender.send(2).expect("open");
            })
        };
        tokio::task::yield_now().await;
        let first = order.turn("1").await;
        sender.send(1).expect("open");
        drop(first);
        second.await.expect("joined");
        assert_eq!(receiver.recv().await, Some(1));
        assert_eq!(receiver.recv().await, Some(2));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unclaimed_call_stops_blocking_after_a_while() {
        let order = ArrivalOrder::default();
        order.record("lost".into());
        order.record("2".into());
        let started = Instant::now();
        let _turn = order.turn("2").await;
        assert!(started.elapsed() >= UNCLAIMED);
    }
}
