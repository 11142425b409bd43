//! An event queue for simulations that keep only a handful of events pending (the
//! start-up keeps at most one per rank): a flat vector scanned for the minimum
//! `(time, seq)`. For a few dozen entries this beats a binary heap several times over,
//! and it pops in exactly the same order as [`super::EventQueue`].

use crate::units::Nanos;

use super::queue::Scheduled;

#[derive(Debug, Clone)]
pub struct SmallEventQueue<E> {
    items: Vec<Scheduled<E>>,
    next_seq: u64,
    now: Nanos,
}

impl<E> Default for SmallEventQueue<E> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            next_seq: 0,
            now: 0,
        }
    }
}

impl<E> SmallEventQueue<E> {
    /// Empties the queue and resets the clock, keeping the allocation.
    pub fn reset(&mut self) {
        self.items.clear();
        self.next_seq = 0;
        self.now = 0;
    }

    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules at `at`, clamped to `now` (as [`super::EventQueue::schedule_at`]).
    pub fn schedule_at(&mut self, at: Nanos, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.items.push(Scheduled {
            time: at.max(self.now),
            seq,
            event,
        });
    }

    pub fn schedule_in(&mut self, delay: Nanos, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Pops the earliest `(time, seq)` and advances the clock to it.
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let mut best = 0;
        let first = self.items.first()?;
        let mut key = (first.time, first.seq);
        for (i, it) in self.items.iter().enumerate().skip(1) {
            if (it.time, it.seq) < key {
                key = (it.time, it.seq);
                best = i;
            }
        }
        let s = self.items.swap_remove(best);
        self.now = s.time;
        Some(s)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::super::EventQueue;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Same pops, same order, as the binary-heap queue, for any interleaving of
        /// schedules and pops.
        #[test]
        fn pops_like_the_heap(ops in proptest::collection::vec((any::<bool>(), 0u64..50), 1..200)) {
            let mut a = SmallEventQueue::default();
            let mut b = EventQueue::new();
            for (i, (push, t)) in ops.into_iter().enumerate() {
                if push {
                    a.schedule_in(t, i);
                    b.schedule_in(t, i);
                } else {
                    let x = a.pop().map(|s| (s.time, s.event));
                    let y = b.pop().map(|s| (s.time, s.event));
                    prop_assert_eq!(x, y);
                }
            }
            while let Some(x) = a.pop() {
                let y = b.pop().unwrap();
                prop_assert_eq!((x.time, x.event), (y.time, y.event));
            }
            prop_assert!(b.pop().is_none());
        }
    }
}
