//! Position in a ring of shared-memory (or tensor-memory) stages.

/// Which stage a producer or consumer is at, and the parity of that stage's barrier phase.
/// `advance` moves to the next stage and flips the phase each time the ring wraps, so a
/// stage's barrier is always waited on with the parity of the phase it will complete next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineState<const STAGES: u32> {
    pub stage: u32,
    pub phase: u32,
}

impl<const STAGES: u32> PipelineState<STAGES> {
    /// Stage 0, phase 0: what a consumer waits for first (the producer's first fill).
    pub const fn new() -> Self {
        PipelineState { stage: 0, phase: 0 }
    }

    /// Stage 0, phase 1: a producer waiting on "stage empty" barriers. A fresh mbarrier counts
    /// its (never run) previous phase as complete, so the first pass over the ring does not block.
    pub const fn producer() -> Self {
        PipelineState { stage: 0, phase: 1 }
    }

    /// The stage the ring visits before `stage`.
    #[inline(always)]
    pub const fn stage_before(stage: u32) -> u32 {
        if stage == 0 { STAGES - 1 } else { stage - 1 }
    }

    #[inline(always)]
    pub fn advance(&mut self) {
        self.stage += 1;
        if self.stage == STAGES {
            self.stage = 0;
            self.phase ^= 1;
        }
    }
}

impl<const STAGES: u32> Default for PipelineState<STAGES> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_flips_on_wrap() {
        let mut s = PipelineState::<3>::new();
        let mut seen = [(0, 0); 7];
        for slot in seen.iter_mut() {
            *slot = (s.stage, s.phase);
            s.advance();
        }
        assert_eq!(seen, [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 0)]);
        let p = PipelineState::<3>::producer();
        assert_eq!((p.stage, p.phase), (0, 1));
        assert_eq!([0, 1, 2].map(PipelineState::<3>::stage_before), [2, 0, 1]);
    }
}
