//! The discrete-event core: virtual time in integer nanoseconds, an event queue ordered
//! by (time, insertion sequence) so that simultaneous events pop in the order they were
//! scheduled, and the seeded RNG plumbing. It knows nothing of KV caches or memory: model
//! code defines its own event type and drives the loop.

mod queue;
mod rng;
mod small_queue;

pub use queue::{EventQueue, Scheduled};
pub use rng::{SimRng, derive_seed, stream};
pub use small_queue::SmallEventQueue;

pub use crate::units::Nanos as SimTime;
