//! A binary-heap event queue keyed by `(time, seq)`.
//!
//! Why a sequence number: two events at the same nanosecond must pop in a fixed order,
//! or the outcome would depend on heap internals. Ordering by insertion keeps runs
//! byte-identical and makes "earlier-scheduled first" the tie rule a reader expects.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::units::Nanos;

/// One scheduled event.
#[derive(Debug, Clone)]
pub struct Scheduled<E> {
    pub time: Nanos,
    pub seq: u64,
    pub event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Scheduled<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// The event queue and the virtual clock. `now` only moves forward, to the time of the
/// event last popped.
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    next_seq: u64,
    now: Nanos,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            next_seq: 0,
            now: 0,
        }
    }

    pub fn with_capacity(n: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(n),
            next_seq: 0,
            now: 0,
        }
    }

    /// Empties the queue and resets the clock, keeping the allocation (Monte Carlo reuse).
    pub fn reset(&mut self) {
        self.heap.clear();
        self.next_seq = 0;
        self.now = 0;
    }

    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Moves the clock to `t` with no event (a driver that runs several queues on one
    /// clock); nothing may be due before `t`, and the clock never goes back.
    pub fn advance_to(&mut self, t: Nanos) {
        debug_assert!(
            self.peek_time().is_none_or(|p| p >= t),
            "an event is due before {t}"
        );
        self.now = self.now.max(t);
    }

    /// Schedules `event` at absolute time `at`. Scheduling in the past is clamped to
    /// `now`: the event still runs, after everything already due now.
    pub fn schedule_at(&mut self, at: Nanos, event: E) {
        let time = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Scheduled { time, seq, event });
    }

    /// Schedules `event` `delay` nanoseconds from now.
    pub fn schedule_in(&mut self, delay: Nanos, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Pops the next event and advances the clock to it.
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let s = self.heap.pop()?;
        self.now = s.time;
        Some(s)
    }

    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|s| s.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.schedule_at(10, "b");
        q.schedule_at(5, "a");
        q.schedule_at(10, "c");
        q.schedule_at(10, "d");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|s| (s.time, s.event))).collect();
        assert_eq!(order, vec![(5, "a"), (10, "b"), (10, "c"), (10, "d")]);
        assert_eq!(q.now(), 10);
    }

    #[test]
    fn past_is_clamped_to_now() {
        let mut q = EventQueue::new();
        q.schedule_at(100, 1);
        q.pop();
        q.schedule_at(50, 2);
        q.schedule_in(0, 3);
        assert_eq!(q.pop().map(|s| (s.time, s.event)), Some((100, 2)));
        assert_eq!(q.pop().map(|s| (s.time, s.event)), Some((100, 3)));
    }
}
