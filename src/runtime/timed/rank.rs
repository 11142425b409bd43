//! What the drivers of several replays on one timeline share (`timed::lockstep`'s
//! DP-attention ranks, `timed::fleet`'s engines behind a router): the [`Rank`] each
//! replay is to them (the full tree's `timed::Sim`, the SWA tree's `timed::swa::Sim`),
//! and the [`Dispatch`] that hands each its requests.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::cache::TreeRules;
use crate::runtime::Capacities;
use crate::runtime::ReplayError;
use crate::runtime::dp::round_robin_rank;
use crate::runtime::frontend::Frontend;
use crate::runtime::l3_store::StoreHandle;
use crate::units::Nanos;
use crate::workload::Request;

use super::Sim;

/// A request a driver hands a replay: its position in the trace, the request, and when
/// its scheduler sees it if the driver's front end delivered it — the TokenizerManager
/// an engine's DP ranks share, a PD server's inbound path ([`Inbound`]); `None`: the
/// replay's own front end delivers it (`Frontend::deliver`, one engine's own
/// TokenizerManager).
pub(crate) struct Fed {
    pub(crate) index: u64,
    pub(crate) req: Request,
    pub(crate) seen: Option<Nanos>,
}

impl Fed {
    /// A request the replay's own front end delivers.
    pub(crate) fn own(index: u64, req: Request) -> Self {
        Fed {
            index,
            req,
            seen: None,
        }
    }
}

/// One server's TokenizerManager as a driver of several schedulers runs it: SGLang runs
/// one per server (`--tokenizer-worker-num` 1), in front of its
/// `DataParallelController` (`managers/data_parallel_controller.py`, 0.5.14–0.5.23), so
/// the DP ranks of an engine share its encode queue and the controller dispatches a
/// request once the TokenizerManager has sent it on, after its encode and its fixed way
/// in. Requests are delivered in the order they were sent.
#[derive(Debug, Clone, Copy)]
pub(super) struct Inbound {
    frontend: Frontend,
    tokenizer_free: Nanos,
}

impl Inbound {
    pub(super) fn new(frontend: Frontend) -> Self {
        Inbound {
            frontend,
            tokenizer_free: 0,
        }
    }

    /// When the scheduler side sees `r`, sent now (`Frontend::deliver`).
    pub(super) fn deliver(&mut self, r: &Request) -> Nanos {
        self.frontend
            .deliver(r.arrival_ns, r.input_tokens, &mut self.tokenizer_free)
    }
}

/// The earliest delivery among `held` (one queue per server, each in the order its
/// [`Inbound`] delivers): when, and which server's; ties go to the lowest server.
pub(super) fn first_delivery<T>(held: &[VecDeque<(Nanos, T)>]) -> Option<(Nanos, usize)> {
    held.iter()
        .enumerate()
        .filter_map(|(x, q)| q.front().map(|h| (h.0, x)))
        .min()
}

/// The trace, read once, handed out round-robin: rank r's requests in arrival order,
/// each delivered by the ranks' shared [`Inbound`] as read (the trace's order is the
/// TokenizerManager's). Only the requests read ahead of a rank's next one are buffered
/// (fewer than the ranks under round-robin), so the replay still streams.
pub(super) struct Dispatch<I> {
    /// Round-robin: the trace, dealt as read. The load-reading methods deal each
    /// request at its arrival from the driver instead (`None`).
    pub(super) src: Option<I>,
    pub(super) inbound: Inbound,
    pub(super) read: u64,
    pub(super) ranks: u32,
    pub(super) queues: Vec<VecDeque<Fed>>,
}

impl<I> Dispatch<I> {
    /// The dispatch of a driver that deals every request itself (`src: None`) to
    /// `ranks` feeds.
    pub(super) fn driven(ranks: usize) -> Self {
        Dispatch {
            src: None,
            inbound: Inbound::new(Frontend::default()),
            read: 0,
            ranks: ranks as u32,
            queues: (0..ranks).map(|_| VecDeque::new()).collect(),
        }
    }

    /// Requests waiting in the feeds of engine `e`'s `ranks` ranks (engine-major).
    pub(super) fn queued(&self, e: usize, ranks: usize) -> u32 {
        queued(&self.queues, e, ranks)
    }
}

/// Requests waiting in `queues` (one per rank, engine-major) for engine `e`'s `ranks`
/// ranks.
pub(super) fn queued(queues: &[VecDeque<Fed>], e: usize, ranks: usize) -> u32 {
    queues[e * ranks..(e + 1) * ranks]
        .iter()
        .map(VecDeque::len)
        .sum::<usize>() as u32
}

/// A driver that reads the trace itself (a router's, a PD deployment's) checks its
/// order: request `index` may not arrive before the one read before it (`prev`, then
/// set to its arrival). Each replay checks its own arrivals too.
pub(super) fn check_arrival(index: u64, r: &Request, prev: &mut Nanos) -> Result<(), ReplayError> {
    if r.arrival_ns < *prev {
        return Err(ReplayError::ArrivalOutOfOrder {
            index,
            id: r.id,
            arrival_ns: r.arrival_ns,
            previous_ns: *prev,
        });
    }
    *prev = r.arrival_ns;
    Ok(())
}

/// One rank's view of the [`Dispatch`].
pub(super) struct RankFeed<I> {
    pub(super) d: Rc<RefCell<Dispatch<I>>>,
    pub(super) rank: usize,
}

impl<I: Iterator<Item = Request>> Iterator for RankFeed<I> {
    type Item = Fed;

    fn next(&mut self) -> Option<Fed> {
        let mut d = self.d.borrow_mut();
        loop {
            if let Some(r) = d.queues[self.rank].pop_front() {
                return Some(r);
            }
            let req = d.src.as_mut()?.next()?;
            let (i, k) = (d.read, round_robin_rank(d.read, d.ranks) as usize);
            d.read += 1;
            let seen = Some(d.inbound.deliver(&req));
            d.queues[k].push_back(Fed {
                index: i,
                req,
                seen,
            });
        }
    }
}

/// One replay as a driver runs it (a DP-attention rank, an engine behind a router): the
/// full-attention tree's (`timed::Sim`) or the SWA tree's (`timed::swa`).
pub(crate) trait Rank {
    /// Its next event's time.
    fn next_time(&self) -> Option<Nanos>;
    /// Handles its events due at `t`.
    fn handle_due(&mut self, t: Nanos) -> Result<(), ReplayError>;
    /// Forms this step's forward at `t`: a prefill batch, or a decode step unless
    /// `hold_decode` (a speculative draft's prefill-first step).
    fn form(&mut self, t: Nanos, hold_decode: bool) -> Result<(), ReplayError>;
    /// Ends a prefill-first step's hold; with `decode` (no rank prefilled), the decode
    /// step it held.
    fn unhold_and_decode(&mut self, decode: bool);
    /// The end of the forward it formed this step, if any.
    fn pending_end(&self) -> Option<Nanos>;
    /// Every rank's forward of this step ends at `step_end`.
    fn commit_step(&mut self, step_end: Nanos);
    /// A rank that formed no forward this step publishes its load when due.
    fn publish_when_idle(&mut self, now: Nanos);
    /// The last load it published.
    fn snapshot(&self) -> Option<crate::runtime::dp::LoadSnapshot>;
    /// Its requests in flight now: read from its feed and not finished (a router adds
    /// those still waiting in the feed).
    fn in_flight(&self) -> u32;
    /// Reads its next request when none is pending.
    fn feed(&mut self) -> Result<(), ReplayError>;
    /// Reads its first request.
    fn pull(&mut self) -> Result<(), ReplayError>;
    /// Its end, for the deployment's figures.
    fn finish(self) -> super::RunEnd;
    /// A handle on its L3 store for the deployment's other schedulers (`None`: no L3).
    fn store_to_share(&self) -> Option<StoreHandle>;
    /// Reads and writes `store` instead of its own L3 (before its first request).
    fn share_store(&mut self, store: StoreHandle);
}

/// Gives the ranks of `engines` (each engine's ranks) the L3 stores `c`'s `l3_scope`
/// says they share ([`crate::runtime::l3_store::share_stores`]).
pub(super) fn share_stores<S: Rank>(c: &Capacities, engines: &mut [&mut [S]]) {
    crate::runtime::l3_store::share_stores(
        c.l3_scope,
        c.nodes,
        engines,
        S::store_to_share,
        S::share_store,
    );
}

/// What a router that reads the engines' caches and tracks each request (Dynamo's KV
/// router) needs of an engine: its tree's tiers for a prompt, as its KV events publish
/// them, and each request's first token and end.
pub(crate) trait RouterView {
    /// The device pages of `pages`' longest cached prefix, and the host pages right
    /// after them ([`crate::cache::HiRadixTree::peek_tiers`]).
    fn peek_tiers(&self, pages: &[crate::cache::PageKey]) -> (u64, u64);
    /// Starts keeping its requests' progress.
    fn track_progress(&mut self);
    /// Moves the progress kept since the last call into `out`.
    fn drain_progress(&mut self, out: &mut Vec<(u64, super::Progress)>);
}

impl<I: Iterator<Item = Fed>, R: TreeRules> RouterView for Sim<I, R> {
    fn peek_tiers(&self, pages: &[crate::cache::PageKey]) -> (u64, u64) {
        self.s.tree.peek_tiers(pages)
    }

    fn track_progress(&mut self) {
        self.progress = Some(Vec::new());
    }

    fn drain_progress(&mut self, out: &mut Vec<(u64, super::Progress)>) {
        if let Some(p) = self.progress.as_mut() {
            out.append(p);
        }
    }
}

impl<I: Iterator<Item = Fed>, R: TreeRules> Rank for Sim<I, R> {
    fn next_time(&self) -> Option<Nanos> {
        self.q.peek_time()
    }

    fn handle_due(&mut self, t: Nanos) -> Result<(), ReplayError> {
        while self.q.peek_time() == Some(t) {
            let ev = self.q.pop().expect("peeked");
            self.handle(ev.event)?;
        }
        Ok(())
    }

    fn form(&mut self, t: Nanos, hold_decode: bool) -> Result<(), ReplayError> {
        self.q.advance_to(t);
        self.hold_decode = hold_decode;
        self.schedule();
        Ok(())
    }

    fn unhold_and_decode(&mut self, decode: bool) {
        self.hold_decode = false;
        if decode {
            self.decode_now();
        } else {
            // No decode step this iteration: its prefetch polls go with it.
            self.poll_sync_due = 0;
        }
    }

    fn pending_end(&self) -> Option<Nanos> {
        Sim::pending_end(self)
    }

    fn commit_step(&mut self, step_end: Nanos) {
        Sim::commit_step(self, step_end)
    }

    fn publish_when_idle(&mut self, now: Nanos) {
        Sim::publish_when_idle(self, now)
    }

    fn snapshot(&self) -> Option<crate::runtime::dp::LoadSnapshot> {
        self.snapshot
    }

    fn in_flight(&self) -> u32 {
        self.running + self.waiting.len() as u32 + u32::from(self.next.is_some())
    }

    fn feed(&mut self) -> Result<(), ReplayError> {
        Sim::feed(self)
    }

    fn pull(&mut self) -> Result<(), ReplayError> {
        Sim::pull(self)
    }

    fn finish(self) -> super::RunEnd {
        Sim::finish(self)
    }

    fn store_to_share(&self) -> Option<StoreHandle> {
        self.s.store_to_share()
    }

    fn share_store(&mut self, store: StoreHandle) {
        self.s.share_store(store)
    }
}
