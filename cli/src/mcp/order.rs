//! Calls into one session run one at a time, in the order they arrived.
//!
//! rmcp handles each request in its own task, and tokio may start those tasks
//! in any order (a freshly spawned task can overtake an earlier one), so a
//! plain mutex would serialize the calls but could run `cd src` after the
//! `ls` sent behind it. The stdin gate therefore records the id of each
//! `tools/call` of the session's tool as its line is read, and a call waits
//! until every call that arrived before it has finished.
//!
//! Every place in the queue is owned by a [`Turn`] guard from the moment the
//! call's handler claims it, whether the call is still waiting or running:
//! dropping the guard (the call finished, or its waiting future was dropped
//! because the client cancelled it) removes the place and wakes the others.
//! A call that leaves the queue in any state therefore never blocks the
//! calls behind it.
//!
//! A recorded request whose handler never runs (rmcp rejected it after the
//! gate let it through) would block the queue forever; such an entry is
//! dropped once it has waited [`UNCLAIMED`] without being claimed. The gate
//! records only calls whose handler claims a place, so this is a last resort.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How long a recorded call may go unclaimed before it stops blocking others.
pub const UNCLAIMED: Duration = Duration::from_secs(2);

/// One call's place: `key` is the request id as the gate saw it, `place` a
/// number unique within the queue, so that a client reusing an id cannot
/// make one call remove another's place.
#[derive(Debug)]
struct Entry {
    key: String,
    place: u64,
    recorded: Instant,
    claimed: bool,
}

/// The queue itself, without waiting: pure bookkeeping.
#[derive(Debug, Default)]
struct Queue {
    entries: VecDeque<Entry>,
    next_place: u64,
}

impl Queue {
    fn push(&mut self, key: String, claimed: bool) -> u64 {
        let place = self.next_place;
        self.next_place += 1;
        self.entries.push_back(Entry {
            key,
            place,
            recorded: Instant::now(),
            claimed,
        });
        place
    }

    /// The place of the earliest unclaimed entry with this key, now claimed;
    /// or a new place at the end for a call the gate did not record.
    fn claim(&mut self, key: &str) -> u64 {
        if let Some(entry) = self
            .entries
            .iter_mut()
            .find(|entry| entry.key == key && !entry.claimed)
        {
            entry.claimed = true;
            return entry.place;
        }
        self.push(key.to_owned(), true)
    }

    fn release(&mut self, place: u64) {
        self.entries.retain(|entry| entry.place != place);
    }

    /// Drops unclaimed entries at the front that waited too long, then says
    /// whether `place` is first, or how long to wait before looking again.
    fn turn_of(&mut self, place: u64) -> Result<(), Duration> {
        while self
            .entries
            .front()
            .is_some_and(|entry| !entry.claimed && entry.recorded.elapsed() >= UNCLAIMED)
        {
            self.entries.pop_front();
        }
        match self.entries.front() {
            Some(front) if front.place == place => Ok(()),
            Some(front) if !front.claimed => Err(UNCLAIMED
                .saturating_sub(front.recorded.elapsed())
                .max(Duration::from_millis(10))),
            _ => Err(UNCLAIMED),
        }
    }
}

/// The arrival-ordered queue of one session.
#[derive(Clone)]
pub struct ArrivalOrder {
    queue: Arc<Mutex<Queue>>,
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
        self.lock().push(key, false);
    }

    /// Waits for this call's turn; the turn ends when the guard is dropped.
    ///
    /// Cancel safe: the place is claimed, and owned by a guard, before the
    /// first wait, so dropping this future while it waits gives the place up.
    pub async fn turn(&self, key: &str) -> Turn {
        let mut changed = self.changed.subscribe();
        let turn = Turn {
            order: self.clone(),
            place: self.lock().claim(key),
        };
        loop {
            let wait = match self.lock().turn_of(turn.place) {
                Ok(()) => return turn,
                Err(wait) => wait,
            };
            let _ = tokio::time::timeout(wait, changed.changed()).await;
        }
    }

    /// How many calls are recorded, waiting or running.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().entries.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call's place in the session, waiting or running; dropping it lets the
/// next call run.
pub struct Turn {
    order: ArrivalOrder,
    place: u64,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.order.lock().release(self.place);
        self.order
            .changed
            .send_modify(|generation| *generation += 1);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use tokio::sync::{mpsc, oneshot};

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

    /// Issue 18, item 1: A runs, B waits behind it and is cancelled, C must
    /// run once A is done, without any fallback timer.
    #[tokio::test(start_paused = true)]
    async fn a_call_cancelled_while_waiting_leaves_the_queue() {
        let order = ArrivalOrder::default();
        for key in ["A", "B", "C"] {
            order.record(key.into());
        }
        let started = Instant::now();
        let a = order.turn("A").await;
        let b = {
            let order = order.clone();
            tokio::spawn(async move { order.turn("B").await })
        };
        tokio::task::yield_now().await;
        b.abort();
        assert!(b.await.is_err_and(|error| error.is_cancelled()));
        drop(a);
        let c = tokio::time::timeout(Duration::from_secs(3600), order.turn("C"))
            .await
            .expect("C got its turn");
        assert_eq!(started.elapsed(), Duration::ZERO, "C waited on a timer");
        drop(c);
        assert_eq!(order.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reused_id_does_not_release_another_calls_place() {
        let order = ArrivalOrder::default();
        order.record("1".into());
        order.record("1".into());
        order.record("2".into());
        let first = order.turn("1").await;
        let second = {
            let order = order.clone();
            tokio::spawn(async move { order.turn("1").await })
        };
        tokio::task::yield_now().await;
        drop(first);
        let second = second.await.expect("joined");
        assert_eq!(order.len(), 2);
        drop(second);
        let _third = order.turn("2").await;
        assert_eq!(order.len(), 1);
    }

    /// What the property test does with call `index`.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        /// The gate reads the call's line (records it).
        Arrive(usize),
        /// The handler starts and waits for its turn.
        Start(usize),
        /// The client cancels: the handler's future is dropped, waiting or running.
        Cancel(usize),
        /// The call finishes its command and gives the turn back.
        Finish(usize),
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        let step = (0..4_u8, 0..5_usize).prop_map(|(kind, index)| match kind {
            0 => Step::Arrive(index),
            1 => Step::Start(index),
            2 => Step::Cancel(index),
            _ => Step::Finish(index),
        });
        proptest::collection::vec(step, 0..40)
    }

    /// A handler: waits for its turn, reports it, holds it until told to
    /// finish (or until aborted, which is the client's cancel).
    struct Handler {
        task: tokio::task::JoinHandle<()>,
        finish: Option<oneshot::Sender<()>>,
    }

    /// Marks the session as held by one call while it lives.
    struct Holding(Arc<Mutex<Option<usize>>>);

    impl Holding {
        fn take(holding: &Arc<Mutex<Option<usize>>>, index: usize) -> Self {
            let mut holder = holding.lock().expect("unpoisoned");
            assert_eq!(*holder, None, "two calls held the session");
            *holder = Some(index);
            Self(Arc::clone(holding))
        }
    }

    impl Drop for Holding {
        fn drop(&mut self) {
            *self.0.lock().expect("unpoisoned") = None;
        }
    }

    /// Runs `steps` on a paused clock, then lets every call still in play
    /// arrive, start and finish, and checks: no call ran while another held
    /// the session, calls that arrived ran in arrival order, every started
    /// call that was not cancelled got its turn without waiting on the
    /// unclaimed timer, and the queue ended empty.
    async fn check(steps: Vec<Step>) {
        let order = ArrivalOrder::default();
        let (ran_sender, mut ran) = mpsc::unbounded_channel::<usize>();
        let holding = Arc::new(Mutex::new(None::<usize>));
        let mut arrived = Vec::new();
        let mut handlers: BTreeMap<usize, Handler> = BTreeMap::new();
        let mut ended = std::collections::BTreeSet::new();
        let started = Instant::now();
        let start = |index: usize| {
            let order = order.clone();
            let ran = ran_sender.clone();
            let holding = Arc::clone(&holding);
            let (finish, finished) = oneshot::channel::<()>();
            let task = tokio::spawn(async move {
                let _turn = order.turn(&index.to_string()).await;
                // Dropped before the turn, on finish and on abort alike.
                let _holding = Holding::take(&holding, index);
                ran.send(index).expect("open");
                let _ = finished.await;
            });
            Handler {
                task,
                finish: Some(finish),
            }
        };
        for step in steps {
            match step {
                Step::Arrive(index) if !arrived.contains(&index) && !ended.contains(&index) => {
                    order.record(index.to_string());
                    arrived.push(index);
                }
                Step::Start(index)
                    if arrived.contains(&index)
                        && !handlers.contains_key(&index)
                        && !ended.contains(&index) =>
                {
                    handlers.insert(index, start(index));
                }
                Step::Cancel(index) => {
                    if let Some(handler) = handlers.remove(&index) {
                        handler.task.abort();
                        let _ = handler.task.await;
                        ended.insert(index);
                    }
                }
                Step::Finish(index) => {
                    if let Some(handler) = handlers.get_mut(&index)
                        && let Some(finish) = handler.finish.take()
                    {
                        let _ = finish.send(());
                    }
                }
                _ => {}
            }
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
        }
        // Every call that arrived and is not over starts now and finishes.
        for &index in &arrived {
            if !ended.contains(&index) && !handlers.contains_key(&index) {
                handlers.insert(index, start(index));
            }
        }
        for handler in handlers.values_mut() {
            if let Some(finish) = handler.finish.take() {
                let _ = finish.send(());
            }
        }
        for (index, handler) in handlers {
            tokio::time::timeout(Duration::from_secs(3600), handler.task)
                .await
                .unwrap_or_else(|_| panic!("call {index} never got its turn"))
                .expect("handler ran");
        }
        assert!(
            started.elapsed() < UNCLAIMED,
            "a call waited on the unclaimed timer"
        );
        drop(ran_sender);
        let mut order_ran = Vec::new();
        while let Some(index) = ran.recv().await {
            order_ran.push(index);
        }
        let expected: Vec<usize> = arrived
            .iter()
            .copied()
            .filter(|index| order_ran.contains(index))
            .collect();
        assert_eq!(order_ran, expected, "calls ran out of arrival order");
        assert_eq!(order.len(), 0, "places left in the queue");
    }

    proptest! {
        #[test]
        fn any_cancel_at_any_point_leaves_the_queue_consistent(steps in steps()) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("runtime");
            runtime.block_on(check(steps));
        }
    }
}
