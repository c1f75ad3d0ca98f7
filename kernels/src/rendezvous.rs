//! Keeping a persistent grid's waves in step: v7's stream-K schedules.
//!
//! Each worker walks its whole units one per wave, and the workers of a wave share their A rows
//! and B columns through L2 only while they are within a few K slices of one another. Left alone
//! they drift apart by ~2% of a tile per tile, the same workers always the slowest, and a long
//! run reads its operands from DRAM again and again (`docs/performance.md`, "DRAM and L2 traffic
//! against cuBLAS"). The rendezvous pulls them together once a wave: after issuing the loads of a
//! whole unit a worker's producer adds 1 to a global counter, and before its item `j` it waits
//! until the counter reaches `workers · j`, i.e. until every worker has issued its units before
//! `j` ([`crate::sched::StreamK::waves_in_step`] says which items wait, and shows that every
//! wait is met). The consumers keep computing on the stages already loaded meanwhile.
//!
//! The counters live in the stream-K workspace ([`crate::sched::Workspace::rendezvous`]) and are
//! 0 when a launch begins: the last worker to depart, after every wait of the launch, clears
//! them. The next launch in the stream reads them only after `griddepcontrol.wait`, when this
//! one has finished.
//!
//! The waits are met only if every worker of the grid is resident at once, which the host's
//! persistent grid (as many clusters as fit) gives on a GPU that runs nothing else. Where other
//! kernels hold SMs, a wait gives up after [`GIVE_UP_NS`] and its worker stops waiting for the
//! rest of the launch (it still counts its units), so a launch loses at most that much.
use crate::ptx::{atom, global, sreg};
use crate::sched::StreamK;

/// How long a worker waits for the others before it stops waiting, in ns of `%globaltimer`:
/// a healthy wait is the drift of one wave, a few µs on the H200.
pub const GIVE_UP_NS: u64 = 50_000;

/// One worker's side of the rendezvous (its one producer thread that loads).
pub struct Rendezvous {
    /// The counters: workers arrived, then workers departed.
    counters: u64,
    workers: u32,
    /// Items `1..=waves` wait; 0 when this thread takes no part.
    waves: u32,
    waiting: bool,
}

impl Rendezvous {
    /// `counters`: the workspace's [`crate::sched::Workspace::rendezvous`] address; `part`:
    /// whether this thread is its worker's one participant.
    #[inline(always)]
    pub fn new(counters: u64, sk: &StreamK, part: bool) -> Self {
        // (Divided only where it is used: before the first load, every instruction counts in a
        // short call.)
        let waves = if part { sk.waves_in_step() } else { 0 };
        Rendezvous { counters, workers: sk.workers, waves, waiting: waves > 0 }
    }

    /// Before item `j` of the walk: wait until every worker has issued its items before `j`.
    #[inline(always)]
    pub fn wait(&mut self, j: u32) {
        if !self.waiting || j == 0 || j > self.waves {
            return;
        }
        let (target, start) = (self.workers * j, sreg::globaltimer());
        while global::ld_relaxed_gpu_u32(self.counters) < target {
            if sreg::globaltimer() - start > GIVE_UP_NS {
                self.waiting = false;
                return;
            }
        }
    }

    /// After issuing the loads of item `j`.
    #[inline(always)]
    pub fn arrive(&self, j: u32) {
        if j < self.waves {
            atom::add_u32(self.counters, 1);
        }
    }

    /// After the walk: the last worker to leave clears both counters for the next launch.
    #[inline(always)]
    pub fn depart(&self) {
        if self.waves > 0 && atom::add_u32(self.counters + 4, 1) == self.workers - 1 {
            global::st_relaxed_gpu_u32(self.counters, 0);
            global::st_relaxed_gpu_u32(self.counters + 4, 0);
        }
    }
}
